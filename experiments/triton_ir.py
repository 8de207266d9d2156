"""Writes the Triton IR of a family of Pallas kernels, lowered for CUDA on any machine (no GPU).

  python -m experiments.triton_ir --out_dir=/tmp/ttir --tiling="row_tile=64"
  python -m experiments.triton_ir --op=gdn --out_dir=/tmp/ttir_gdn --batch=4 --seq_len=256
  python -m experiments.triton_ir --op=topk --out_dir=/tmp/ttir_topk --topk_sub_keys=512
  /path/to/triton-venv/bin/python experiments/triton_ir_stats.py /tmp/ttir

Traces the forward and backward of one op by its kernels (`--op`: "sdm", SDM's phase 2 in
the shared error form with a bf16 table; "sdm_layer", the whole SDM layer as it runs on a
GPU (projections, the top-k kernel, phase 1 with its pair-weight kernels, phase 2), bf16;
"gdn", the chunked gated delta rule with its backward kernels, bf16; "topk", the
product-key top-k, float32 scores) at the given shapes and tiling (`--tiling` over that
family's KernelConfig; not for sdm_layer), lowers the program for the "cuda" platform
(with `platform.on_gpu` answering True, so every op picks what it picks on a GPU), and
writes one `NN_<kernel>.ttir` per Pallas kernel (what `pallas_call(..., debug=True)`
prints, in launch order) and `launch.json` (each kernel's warps and stages).
With Triton installed in a separate environment (the version the GPU's JAX uses),
`triton_ir_stats.py` compiles those files for sm_90 and reports registers, spills, shared
memory and instruction counts: a static check of a kernel change before any device time
(it also catches primitives the Triton lowering lacks, at lowering here). On the GPU,
XLA compiles the same IR with its own Triton, which need not lay kernels out the same way:
`experiments/cached_binaries.py` reads what it built. The chunked
kernels' per-chunk shapes do not depend on T, so a short sequence gives the kernels of a
long one.
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
import jax.numpy as jnp

from pallas_kernels import platform
from pallas_kernels.gated_delta import chunk_pallas
from pallas_kernels.product_key import topk_pallas
from pallas_kernels.sparse_delta import scan_pallas
from sdm_jax.evaluation import sdm_benchmarks
from sdm_jax.evaluation import tiling
from sdm_jax.layers.sparse_delta_memory import SparseDeltaMemory
from sdm_jax.training import records

LAUNCH_FILE = "launch.json"  # {file name: {"num_warps", "num_stages"}}

_OP = flags.DEFINE_enum("op", "sdm", ["sdm", "sdm_layer", "gdn", "topk"],
                        "Which kernel family (or the SDM layer's kernels).")
_OUT_DIR = flags.DEFINE_string("out_dir", None, "Where the .ttir files go.", required=True)
_BATCH = flags.DEFINE_integer("batch", 16, "Sequences (sdm: one head each; gdn: B).")
_SEQ_LEN = flags.DEFINE_integer("seq_len", 256, "Tokens per sequence.")
_SLOTS = flags.DEFINE_integer("sdm_slots", 16384, "sdm: slots N (a perfect square).")
_WRITES = flags.DEFINE_integer("sdm_writes", 64, "sdm: W.")
_READS = flags.DEFINE_integer("sdm_reads", 64, "sdm: R.")
_MODEL_DIM = flags.DEFINE_integer("model_dim", 512, "sdm_layer: d (one head: Dv = d).")
_VALUE_DIM = flags.DEFINE_integer("value_dim", 512, "Dv (gdn: V).")
_HEADS = flags.DEFINE_integer("heads", 4, "gdn: H.")
_KEY_DIM = flags.DEFINE_integer("key_dim", 64, "gdn: K.")
_TOPK_ROWS = flags.DEFINE_integer("topk_rows", 65536, "topk: rows of scores.")
_TOPK_SUB_KEYS = flags.DEFINE_integer("topk_sub_keys", 512, "topk: S (2S scores per row).")
_TOPK_K = flags.DEFINE_integer("topk_k", 32, "topk: k.")
_CHUNK = flags.DEFINE_integer("chunk_size", 16, "C (sdm, gdn).")
_TILING = flags.DEFINE_string("tiling", "default",
                              "'default' or 'field=value;...' over the family's KernelConfig "
                              "(scan_pallas, chunk_pallas or topk_pallas).")


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


def lowered_modules(fn, *args) -> list[Kernel]:
  """Every Pallas kernel in jit(fn)(*args) lowered for CUDA, in launch order. args may be
  ShapeDtypeStructs."""
  pallas_call = pl.pallas_call
  launch = {}  # kernel name -> (num_warps, num_stages) of its pallas_call

  def debug_call(kernel, *args, **kwargs):
    params = kwargs.get("compiler_params")
    launch[kwargs.get("name") or _kernel_name(kernel)] = (
        getattr(params, "num_warps", None) or 4, getattr(params, "num_stages", None) or 3)
    return pallas_call(kernel, *args, **{**kwargs, "debug": True})

  printed = io.StringIO()
  with mock.patch.object(pl, "pallas_call", debug_call), \
       mock.patch.object(platform, "on_gpu", lambda: True), contextlib.redirect_stdout(printed):
    jax.jit(fn).trace(*args).lower(lowering_platforms=("cuda",))
  modules = re.findall(r"^module @\w+ \{\n.*?^\}[^\n]*$", printed.getvalue(), re.S | re.M)
  kernels = []
  for module in modules:
    name = re.match(r"module @(\w+)", module).group(1)
    kernels.append(Kernel(name, module + "\n", *launch.get(name, (4, 3))))
  return kernels


def sdm_kernel_ir(*, batch: int, seq_len: int, slots: int, value_dim: int, writes: int,
                  reads: int, chunk_size: int, config: scan_pallas.KernelConfig
                  ) -> list[Kernel]:
  """SDM phase 2's fwd+bwd kernels (`lowered_modules`)."""
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

  return lowered_modules(jax.grad(loss, argnums=(0, 1)), memory, plan.coefs, plan.ids)


def sdm_layer_kernel_ir(*, batch: int, seq_len: int, model_dim: int, slots: int,
                        writes: int, reads: int, chunk_size: int) -> list[Kernel]:
  """The SDM layer's fwd+bwd kernels as a GPU runs it (impl "auto", bf16 activations,
  gradients w.r.t. every parameter and the input)."""
  layer = SparseDeltaMemory(model_dim=model_dim, num_heads=1, num_slots=slots,
                            num_writes=writes, num_reads=reads, chunk_size=chunk_size,
                            dtype=jnp.bfloat16)
  x = jax.ShapeDtypeStruct((batch, seq_len, model_dim), jnp.bfloat16)
  positions = jnp.arange(seq_len)
  with mock.patch.object(platform, "on_gpu", lambda: True):
    params = jax.eval_shape(layer.init, jax.random.PRNGKey(0), x, positions)

  def loss(params, x):
    return jnp.sum(layer.apply(params, x, positions).astype(jnp.float32))

  return lowered_modules(jax.grad(loss, argnums=(0, 1)), params, x)


def gdn_kernel_ir(*, batch: int, seq_len: int, heads: int, key_dim: int, value_dim: int,
                  chunk_size: int, config: chunk_pallas.KernelConfig) -> list[Kernel]:
  """The gated delta rule's fwd+bwd kernels (bf16 inputs, float32 state)."""
  shape = lambda *dims, dtype=jnp.bfloat16: jax.ShapeDtypeStruct(dims, dtype)  # noqa: E731
  tokens = (batch, seq_len, heads)
  args = (shape(*tokens, key_dim), shape(*tokens, key_dim), shape(*tokens, value_dim),
          shape(*tokens, dtype=jnp.float32), shape(*tokens),
          shape(batch, heads, key_dim, value_dim, dtype=jnp.float32))

  def loss(*args):
    out, final = chunk_pallas.gated_delta_rule(
        *args, scale=key_dim ** -0.5, chunk_size=chunk_size, config=config, interpret=False)
    return jnp.sum(out.astype(jnp.float32)) + jnp.sum(final)

  return lowered_modules(jax.grad(loss, argnums=tuple(range(6))), *args)


def topk_kernel_ir(*, rows: int, sub_keys: int, k: int, config: topk_pallas.KernelConfig
                   ) -> list[Kernel]:
  """The product-key top-k's kernel (its backward is a scatter in XLA)."""
  def loss(scores):
    _, logits = topk_pallas.product_key_topk(scores, k, config=config, interpret=False)
    return jnp.sum(logits)

  return lowered_modules(jax.grad(loss),
                         jax.ShapeDtypeStruct((rows, 2 * sub_keys), jnp.float32))


def main(argv):
  del argv
  if _OP.value == "sdm":
    config = sdm_benchmarks.parse_tiling(_TILING.value, _VALUE_DIM.value)
    modules = sdm_kernel_ir(batch=_BATCH.value, seq_len=_SEQ_LEN.value, slots=_SLOTS.value,
                            value_dim=_VALUE_DIM.value, writes=_WRITES.value,
                            reads=_READS.value, chunk_size=_CHUNK.value, config=config)
  elif _OP.value == "sdm_layer":
    config = None
    modules = sdm_layer_kernel_ir(batch=_BATCH.value, seq_len=_SEQ_LEN.value,
                                  model_dim=_MODEL_DIM.value, slots=_SLOTS.value,
                                  writes=_WRITES.value, reads=_READS.value,
                                  chunk_size=_CHUNK.value)
  elif _OP.value == "gdn":
    config = tiling.parse_tiling(_TILING.value,
                                 chunk_pallas.default_config(_VALUE_DIM.value, jnp.bfloat16))
    modules = gdn_kernel_ir(batch=_BATCH.value, seq_len=_SEQ_LEN.value, heads=_HEADS.value,
                            key_dim=_KEY_DIM.value, value_dim=_VALUE_DIM.value,
                            chunk_size=_CHUNK.value, config=config)
  else:
    config = tiling.parse_tiling(_TILING.value,
                                 topk_pallas.default_config(_TOPK_SUB_KEYS.value, _TOPK_K.value))
    modules = topk_kernel_ir(rows=_TOPK_ROWS.value, sub_keys=_TOPK_SUB_KEYS.value,
                             k=_TOPK_K.value, config=config)
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
  print(records.dumps({"op": _OP.value, "out_dir": _OUT_DIR.value,
                       "config": config and config._asdict(), "files": written}))


if __name__ == "__main__":
  app.run(main)
