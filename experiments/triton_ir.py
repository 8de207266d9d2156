"""Writes the Triton IR of a family of Pallas kernels, lowered for CUDA on any machine (no GPU).

  python -m experiments.triton_ir --out_dir=/tmp/ttir --tiling="row_tile=64"
  python -m experiments.triton_ir --op=gdn --out_dir=/tmp/ttir_gdn --batch=4 --seq_len=256
  python -m experiments.triton_ir --op=topk --out_dir=/tmp/ttir_topk --topk_sub_keys=512
  /path/to/triton-venv/bin/python experiments/triton_ir_stats.py /tmp/ttir

Traces one op's forward and backward by its kernels (`experiments.kernel_programs`: `--op`,
the shapes and `--tiling`), lowers the program for the "cuda" platform, and writes one
`NN_<kernel>.ttir` per Pallas kernel (what `pallas_call(..., debug=True)` prints, in launch
order) and `launch.json` (each kernel's warps and stages).
With Triton installed in a separate environment (the version the GPU's JAX uses),
`triton_ir_stats.py` compiles those files for sm_90 and reports registers, spills, shared
memory and instruction counts: a static check of a kernel change before any device time
(it also catches primitives the Triton lowering lacks, at lowering here). On the GPU,
XLA compiles the same IR with its own Triton, which need not lay kernels out the same way
(pip's Triton 3.6 built the top-k in 167 registers, XLA in 119): `experiments.xla_build`
compiles the same program as XLA does, without a GPU, and `experiments/cached_binaries.py`
reads what XLA built on one.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import re
from typing import NamedTuple
from unittest import mock

from absl import app
from absl import flags
import jax
from jax.experimental import pallas as pl

from experiments import kernel_programs
from experiments.kernel_programs import Program
from sdm_jax.training import records

LAUNCH_FILE = "launch.json"  # {file name: {"num_warps", "num_stages"}}

_OUT_DIR = flags.DEFINE_string("out_dir", None, "Where the .ttir files go.", required=True)


class Kernel(NamedTuple):
  """One lowered Pallas kernel."""
  name: str
  ir: str          # the Triton IR module
  num_warps: int   # what its pallas_call asked Triton for (the stats need it)
  num_stages: int


def _kernel_name(kernel) -> str:
  while isinstance(kernel, functools.partial):
    kernel = kernel.func
  return getattr(kernel, "__name__", "")


def lowered_modules(program: Program) -> list[Kernel]:
  """Every Pallas kernel of the program lowered for CUDA, in launch order."""
  pallas_call = pl.pallas_call
  launch = {}  # kernel name -> (num_warps, num_stages) of its pallas_call

  def debug_call(kernel, *args, **kwargs):
    params = kwargs.get("compiler_params")
    launch[kwargs.get("name") or _kernel_name(kernel)] = (
        getattr(params, "num_warps", None) or 4, getattr(params, "num_stages", None) or 3)
    return pallas_call(kernel, *args, **{**kwargs, "debug": True})

  printed = io.StringIO()
  with mock.patch.object(pl, "pallas_call", debug_call), \
       kernel_programs.as_on_gpu(), contextlib.redirect_stdout(printed):
    jax.jit(program.fn).trace(*program.args).lower(lowering_platforms=("cuda",))
  modules = re.findall(r"^module @\w+ \{\n.*?^\}[^\n]*$", printed.getvalue(), re.S | re.M)
  kernels = []
  for module in modules:
    name = re.match(r"module @(\w+)", module).group(1)
    kernels.append(Kernel(name, module + "\n", *launch.get(name, (4, 3))))
  return kernels


def main(argv):
  del argv
  op, program = kernel_programs.program_from_flags()
  modules = lowered_modules(program)
  os.makedirs(_OUT_DIR.value, exist_ok=True)
  written, launch = [], {}
  for index, kernel in enumerate(modules):
    written.append(f"{index:02d}_{kernel.name}.ttir")
    launch[written[-1]] = {"num_warps": kernel.num_warps, "num_stages": kernel.num_stages}
    with open(os.path.join(_OUT_DIR.value, written[-1]), "w") as f:
      f.write(kernel.ir)
  # What each kernel asks Triton for, read by triton_ir_stats.py.
  with open(os.path.join(_OUT_DIR.value, LAUNCH_FILE), "w") as f:
    f.write(records.dumps(launch))
  print(records.dumps({"op": op, "out_dir": _OUT_DIR.value,
                       "config": program.config and program.config._asdict(),
                       "files": written}))


if __name__ == "__main__":
  app.run(main)
