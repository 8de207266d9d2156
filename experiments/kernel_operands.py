"""Writes what it takes to replay one chunk's launches of SDM phase 2's kernels without JAX:
each launch's operands (`sdm_jax.evaluation.kernel_operands`) and, on a GPU, the cubins XLA
builds for them. Nsight Compute cannot attach to a JAX process on the H200 (WORKSPACE.md,
issue 11, sessions 13-14); it can profile `experiments/replay_kernel.py`, which loads a
cubin and these operands and launches it (numpy and CuPy, no JAX).

  python -m experiments.kernel_operands --out_dir=/tmp/ops --batch=16 --seq_len=2048
  python3 experiments/replay_kernel.py /tmp/ops/bwd_union_kernel          # time it
  ncu --clock-control none --set full -k regex:bwd_union --launch-skip 3 --launch-count 1 \\
      python3 experiments/replay_kernel.py /tmp/ops/bwd_union_kernel        # its counters

The shapes and the tiling are `experiments.kernel_programs`' flags (`--op=sdm`'s: phase 2
in the shared form, bf16 table; `sdm_small`'s layer is --batch=16 --seq_len=2048, the
defaults otherwise). The cubins come from `experiments.xla_build.build` on this machine's
GPU (the same compile as the step's kernels at these shapes); each launch.json then names
its kernel's cubin. Elsewhere only the operands are written.
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
_KERNELS = flags.DEFINE_list("kernels", list(kernel_operands.DEFAULT_KERNELS),
                             "Phase 2's kernels whose launch is recorded.")
_CHUNK_INDEX = flags.DEFINE_integer("chunk_index", None,
                                    "The chunk whose launches are recorded (default: the "
                                    "middle one).")


def main(argv):
  del argv
  if flags.FLAGS.op != "sdm":
    raise ValueError(f"--op must be sdm (phase 2's kernels), got {flags.FLAGS.op!r}")
  arguments = kernel_programs.sdm_arguments_from_flags()
  launches = kernel_operands.record(**arguments, heads=1, dtype="bfloat16",
                                    table_dtype="bfloat16", kernels=_KERNELS.value,
                                    chunk_index=_CHUNK_INDEX.value)
  cubins = {}
  if jax.default_backend() == "gpu":
    binaries = os.path.join(_OUT_DIR.value, "binaries")
    program = kernel_programs.sdm_program(**arguments)
    built = xla_build.build(program, jax.devices()[0], binaries)
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
  print(records.dumps({"out_dir": _OUT_DIR.value,
                       **dict(arguments, config=arguments["config"]._asdict()),
                       "launches": written}))


if __name__ == "__main__":
  flags.mark_flag_as_required("out_dir")
  cli.run(main)
