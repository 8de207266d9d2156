"""Writes what it takes to replay a Pallas kernel's launch without JAX: the launch's
operands (`sdm_jax.evaluation.kernel_operands`) and, on a GPU, the cubin XLA builds for it.
Nsight Compute cannot attach to a JAX process on the H200 (WORKSPACE.md, issue 11,
sessions 13-14); it can profile `experiments/replay_kernel.py`, which loads a cubin and
these operands and launches it (numpy and CuPy, no JAX).

  python -m experiments.kernel_operands --op=sdm --out_dir=/tmp/ops --batch=16 --seq_len=2048
  python -m experiments.kernel_operands --op=topk --out_dir=/tmp/ops   # 65,536 rows, S = 512, k = 32
  python3 experiments/replay_kernel.py /tmp/ops/bwd_union_kernel          # time it
  ncu --clock-control none --set full -k regex:bwd_union --launch-skip 3 --launch-count 1 \\
      python3 experiments/replay_kernel.py /tmp/ops/bwd_union_kernel        # its counters

`--op` (sdm: phase 2's kernels at one chunk, `--kernels`, `--chunk_index`; topk: the
product-key top-k kernel), the shapes and `--tiling` are `experiments.kernel_programs`'
flags (`sdm_small`'s SDM layer is --batch=16 --seq_len=2048, the defaults otherwise). The
cubins come from `experiments.xla_build.build` on this machine's GPU (the same compile as
the op's at these shapes); each launch.json then names its kernel's cubin. Elsewhere only
the operands are written.
"""

from __future__ import annotations

import os

from absl import flags
import jax

from experiments import cli
from experiments import kernel_programs
from experiments import xla_build
from sdm_jax.evaluation import kernel_operands
from sdm_jax.training import records

_OUT_DIR = flags.DEFINE_string("out_dir", None, "Where each kernel's folder is written.")
_KERNELS = flags.DEFINE_list("kernels", list(kernel_operands.PHASE2_KERNELS),
                             "--op=sdm: phase 2's kernels whose launch is recorded.")
_CHUNK_INDEX = flags.DEFINE_integer("chunk_index", None,
                                    "--op=sdm: the chunk whose launches are recorded "
                                    "(default: the middle one).")


def main(argv):
  del argv
  op = flags.FLAGS.op
  if op == "sdm":
    arguments = kernel_programs.sdm_arguments_from_flags()
    launches = kernel_operands.record_phase2(**arguments, kernels=_KERNELS.value,
                                             chunk_index=_CHUNK_INDEX.value)
    program = kernel_programs.sdm_program
  elif op == "topk":
    arguments = kernel_programs.topk_arguments_from_flags()
    launches = kernel_operands.record_topk(**arguments)
    program = kernel_programs.topk_program
  else:
    raise ValueError(f"--op must be sdm or topk (one kernel family's launches), got {op!r}")
  cubins = {}
  if jax.default_backend() == "gpu":
    built = xla_build.build(program(**arguments), jax.devices()[0],
                            os.path.join(_OUT_DIR.value, "binaries"))
    for name in launches:
      found = sorted(f for f in built["files"] if f.endswith(f".{name}.cubin"))
      if not found:
        raise ValueError(f"XLA's build has no cubin of {name}")
      cubins[name] = os.path.join("..", "binaries", found[0])
  written = {}
  for name, launch in launches.items():
    directory = kernel_operands.save(dict(launch, cubin=cubins.get(name)), _OUT_DIR.value)
    written[name] = {"dir": directory, "grid": launch["grid"],
                     "params": len(launch["params"]), "cubin": cubins.get(name)}
  print(records.dumps({"op": op, "out_dir": _OUT_DIR.value,
                       **dict(arguments, config=arguments["config"]._asdict()),
                       "launches": written}))


if __name__ == "__main__":
  flags.mark_flag_as_required("out_dir")
  cli.run(main)
