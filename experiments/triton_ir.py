"""Writes the Triton IR of SDM's phase-2 kernels, lowered for CUDA on any machine (no GPU).

  python -m experiments.triton_ir --out_dir=/tmp/ttir --tiling="entry_sums=segments"
  /path/to/triton-venv/bin/python experiments/triton_ir_stats.py /tmp/ttir

Traces phase 2's forward and backward (shared error form, bf16 table) at the given shapes
and tiling, lowers the program for the "cuda" platform, and writes one `NN_<kernel>.ttir`
per Pallas kernel (what `pallas_call(..., debug=True)` prints, in launch order). With
Triton installed in a separate environment (the version the GPU's JAX uses),
`triton_ir_stats.py` compiles those files for sm_90 and reports registers, spills, shared
memory and instruction counts: a static check of a kernel change before any device time
(it also catches primitives the Triton lowering lacks, at lowering here). The kernels'
per-chunk shapes do not depend on T, so a short sequence gives the kernels of a long one.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from unittest import mock

from absl import app
from absl import flags
import jax
from jax.experimental import pallas as pl
import jax.numpy as jnp

from pallas_kernels.sparse_delta import scan_pallas
from sdm_jax.evaluation import sdm_benchmarks
from sdm_jax.training import records

_OUT_DIR = flags.DEFINE_string("out_dir", None, "Where the .ttir files go.", required=True)
_BATCH = flags.DEFINE_integer("batch", 16, "Sequences (x heads: one head).")
_SEQ_LEN = flags.DEFINE_integer("seq_len", 256, "Tokens per sequence.")
_SLOTS = flags.DEFINE_integer("sdm_slots", 16384, "Slots N (a perfect square).")
_VALUE_DIM = flags.DEFINE_integer("value_dim", 512, "Dv.")
_WRITES = flags.DEFINE_integer("sdm_writes", 64, "W.")
_READS = flags.DEFINE_integer("sdm_reads", 64, "R.")
_CHUNK = flags.DEFINE_integer("chunk_size", 16, "C.")
_TILING = flags.DEFINE_string("tiling", "default",
                              "'default' or 'field=value;...' over scan_pallas.KernelConfig.")


def kernel_ir(*, batch: int, seq_len: int, slots: int, value_dim: int, writes: int,
              reads: int, chunk_size: int, config: scan_pallas.KernelConfig
              ) -> list[tuple[str, str]]:
  """[(kernel name, Triton IR module text)] of phase 2's fwd+bwd, in launch order."""
  args = sdm_benchmarks.make_inputs(
      jax.random.PRNGKey(0), batch=batch, seq_len=seq_len, heads=1, slots=slots,
      value_dim=value_dim, writes=writes, reads=reads, dtype=jnp.bfloat16,
      table_dtype=jnp.bfloat16)
  inputs, plan_fn = sdm_benchmarks._planner(  # pylint: disable=protected-access
      args, chunk_size=chunk_size, error="shared", impl="pallas_gpu")
  plan = jax.eval_shape(plan_fn, *inputs[1:])
  memory = jax.ShapeDtypeStruct(inputs.memory.shape, inputs.memory.dtype)

  def loss(memory, coefs, ids):
    out, _ = scan_pallas.scan_chunks(memory, plan._replace(ids=ids, coefs=coefs),
                                     error="shared", config=config, interpret=False)
    return jnp.sum(out)

  pallas_call = pl.pallas_call
  printed = io.StringIO()
  with mock.patch.object(pl, "pallas_call",
                         lambda *a, **k: pallas_call(*a, **{**k, "debug": True})), \
       contextlib.redirect_stdout(printed):
    jax.jit(jax.grad(loss, argnums=(0, 1))).trace(memory, plan.coefs, plan.ids).lower(
        lowering_platforms=("cuda",))
  modules = re.findall(r"^module @\w+ \{\n.*?^\}[^\n]*$", printed.getvalue(), re.S | re.M)
  return [(re.match(r"module @(\w+)", m).group(1), m + "\n") for m in modules]


def main(argv):
  del argv
  config = sdm_benchmarks.parse_tiling(_TILING.value, _VALUE_DIM.value)
  modules = kernel_ir(batch=_BATCH.value, seq_len=_SEQ_LEN.value, slots=_SLOTS.value,
                      value_dim=_VALUE_DIM.value, writes=_WRITES.value, reads=_READS.value,
                      chunk_size=_CHUNK.value, config=config)
  os.makedirs(_OUT_DIR.value, exist_ok=True)
  written = []
  for index, (name, text) in enumerate(modules):
    written.append(f"{index:02d}_{name}.ttir")
    with open(os.path.join(_OUT_DIR.value, written[-1]), "w") as f:
      f.write(text)
  print(records.dumps({"out_dir": _OUT_DIR.value, "config": config._asdict(),
                       "files": written}))


if __name__ == "__main__":
  app.run(main)
