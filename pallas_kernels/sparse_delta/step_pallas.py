"""One decode step of the sparse delta rule as one Pallas kernel (Triton on GPU).

Per sequence x head (a table M [N, Dv]) and token, with W distinct written slots I, weights
k, and R read slots J, weights q (DESIGN.md 3.1):

  dec = exp(g) M[I];  shared:   M[I] = dec + k delta^T,  delta = beta (v - k^T dec)
                      per_slot: M[I] = dec + beta k (v - dec)
  out = q^T M[J]   (after the write)

Every term is per value column, so the grid is (B*H, column slabs) and each program owns
its slab of every row it touches: it gathers its W written and R read rows, updates the
written ones in registers and scatters them back in place (the table is aliased to the
output, so decode never copies it). The read comes from registers too: a read slot that was
just written takes its new row through a [R, W] match matrix, every other read slot the row
it loaded. Which value a load of a written row saw is then irrelevant, so the kernel needs
no barrier between its loads and its stores. Rows are widened to float32 on load and
rounded to the table's dtype on store, like `sdm_jax.ops.sparse_delta.sparse_delta_step`,
the XLA step this replaces on GPU (and its reference).

Slot ids must lie in [0, N) and be distinct within a token (what product-key top-k gives).
"""

from __future__ import annotations

import functools

import jax
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as pltriton
import jax.numpy as jnp

from pallas_kernels import platform
from pallas_kernels.blocks import is_power_of_two, next_power_of_two
from pallas_kernels.sparse_delta import scan_pallas
from pallas_kernels.sparse_delta.onehot import onehot_matmul

ERRORS = ("shared", "per_slot")
MIN_ROWS = 16  # tensor-core dots need dims >= 16: W and R pad to this
_NO_SLOT = -1


def kernel_limits(*, value_dim: int, table_dtype, accumulation) -> str | None:
  """Why the kernel cannot take these inputs, or None if it can: those of the phase-2
  kernels' tables (`scan_pallas.table_limits`)."""
  return scan_pallas.table_limits(value_dim=value_dim, table_dtype=table_dtype,
                                  accumulation=accumulation)


def default_block_cols(value_dim: int) -> int:
  """Value columns per program: the phase-2 kernels' slab width for this Dv."""
  return scan_pallas.default_config(value_dim).block_cols


def _kernel(write_idx_ref, write_w_ref, v_ref, beta_ref, g_ref, read_idx_ref, read_w_ref,
            memory_ref, out_ref, memory_out_ref, *, block_cols: int, error: str, pieces: int):
  bh, slab = pl.program_id(0), pl.program_id(1)
  cols = slab * block_cols + jnp.arange(block_cols, dtype=jnp.int32)
  write_idx, read_idx = write_idx_ref[bh, :], read_idx_ref[bh, :]  # [W], [R]; -1 = padding
  written, read = write_idx >= 0, read_idx >= 0

  old_rows = scan_pallas.gather_rows(memory_ref, (bh,), write_idx, cols, written)
  read_rows = scan_pallas.gather_rows(memory_ref, (bh,), read_idx, cols, read)
  write_w = write_w_ref[bh, :][:, None]  # [W, 1]; 0 for padding
  beta, decay = beta_ref[bh], jnp.exp(g_ref[bh])
  v = v_ref[bh, pl.ds(slab * block_cols, block_cols)][None, :]  # [1, BD]
  decayed = decay * old_rows
  if error == "shared":
    delta = beta * (v - jnp.sum(write_w * decayed, axis=0, keepdims=True))
    new_rows = decayed + write_w * delta
  else:
    new_rows = decayed + (beta * write_w) * (v - decayed)
  new_rows = new_rows.astype(memory_out_ref.dtype)

  match = (read_idx[:, None] == write_idx[None, :]) & written[None, :]  # [R, W]
  rewritten = jnp.max(match.astype(jnp.int32), axis=1) > 0
  reread = onehot_matmul(match, new_rows.astype(jnp.float32), pieces)
  after_write = jnp.where(rewritten[:, None], reread, read_rows)
  out_ref[bh, pl.ds(slab * block_cols, block_cols)] = jnp.sum(
      read_w_ref[bh, :][:, None] * after_write, axis=0)

  # Padding lanes point past the table: masked off on GPU, and in interpret mode (a
  # read-modify-write of every lane) their stale values must not land on a real row.
  store_at = jnp.where(written, write_idx, memory_out_ref.shape[1])
  mask = jnp.broadcast_to(written[:, None], new_rows.shape)
  pltriton.store(memory_out_ref.at[bh, store_at[:, None], cols[None, :]], new_rows, mask=mask)


def _padded(x, width, fill):
  return jnp.pad(x, [(0, 0), (0, width - x.shape[-1])], constant_values=fill)


@functools.partial(jax.jit, static_argnames=("error", "block_cols", "num_warps", "interpret"))
def _step(memory, write_idx, write_w, v, beta, g, read_idx, read_w, *, error, block_cols,
          num_warps, interpret):
  batch, heads, slots, value_dim = memory.shape
  flat = lambda x: x.reshape(batch * heads, *x.shape[2:])  # noqa: E731
  writes = max(MIN_ROWS, next_power_of_two(write_idx.shape[-1]))
  reads = max(MIN_ROWS, next_power_of_two(read_idx.shape[-1]))
  kernel = functools.partial(_kernel, block_cols=block_cols, error=error,
                             pieces=1 if memory.dtype == jnp.bfloat16 else 3)
  out, memory = pl.pallas_call(
      kernel,
      out_shape=[jax.ShapeDtypeStruct((batch * heads, value_dim), jnp.float32),
                 jax.ShapeDtypeStruct((batch * heads, slots, value_dim), memory.dtype)],
      grid=(batch * heads, value_dim // block_cols),
      input_output_aliases={7: 1},
      interpret=interpret,
      compiler_params=pltriton.CompilerParams(num_warps=num_warps, num_stages=1),
  )(_padded(flat(write_idx).astype(jnp.int32), writes, _NO_SLOT),
    _padded(flat(write_w), writes, 0), flat(v), flat(beta), flat(g),
    _padded(flat(read_idx).astype(jnp.int32), reads, _NO_SLOT),
    _padded(flat(read_w), reads, 0), flat(memory))
  return out.reshape(batch, heads, value_dim), memory.reshape(batch, heads, slots, value_dim)


def sparse_delta_step(memory, write_idx, write_w, v, beta, g, read_idx, read_w, *,
                      error: str = "shared", block_cols: int | None = None,
                      num_warps: int = 4, interpret: bool | None = None):
  """One token of the sparse delta rule, in place on the table.

  Args:
    memory: [B, H, N, Dv] float32 or bfloat16; updated in place (aliased to the result)
      when the caller's jit donates it, as a decode step does.
    write_idx: [B, H, W] int, distinct in [0, N); write_w: [B, H, W] float32.
    v: [B, H, Dv] float32; beta, g: [B, H] float32.
    read_idx: [B, H, R] int in [0, N); read_w: [B, H, R] float32.
    error: "shared" or "per_slot".
    block_cols: value columns per program (a power of two >= 16 dividing Dv); default
      `default_block_cols(Dv)`.
    interpret: default: unless on a GPU.

  Returns:
    (out [B, H, Dv] float32, memory [B, H, N, Dv] in its dtype).
  """
  if error not in ERRORS:
    raise ValueError(f"error must be one of {ERRORS}, got {error!r}")
  value_dim = memory.shape[-1]
  reason = kernel_limits(value_dim=value_dim, table_dtype=memory.dtype,
                         accumulation=jnp.result_type(write_w, v, beta, g, read_w))
  if reason:
    raise ValueError(f"the Pallas sparse delta step cannot run: {reason}")
  block_cols = default_block_cols(value_dim) if block_cols is None else block_cols
  if not is_power_of_two(block_cols) or block_cols < 16 or value_dim % block_cols:
    raise ValueError(f"block_cols must be a power of two >= 16 dividing Dv={value_dim}, got "
                     f"{block_cols}")
  if interpret is None:
    interpret = not platform.on_gpu()
  return _step(memory, write_idx, write_w, v, beta, g, read_idx, read_w, error=error,
               block_cols=block_cols, num_warps=num_warps, interpret=interpret)


__all__ = ["ERRORS", "default_block_cols", "kernel_limits", "sparse_delta_step"]
