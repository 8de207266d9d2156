"""Phase 2 of the chunked sparse delta rule in XLA: a `lax.scan` over chunks (DESIGN.md 3.4).

The twin of `scan_pallas`: same contract, same results up to float32 reduction order. Per
chunk, gather the rows it writes (sorted unique slots, padded with out-of-range ids) and
reads, apply the pure chunk function `_chunk_rows`, scatter the new rows. Its `custom_vjp`
keeps only the rows each chunk overwrote and walks the chunks in reverse, undoing the
writes to recover each chunk's starting rows, so residual memory is O(T W Dv + N Dv) per
sequence and head instead of a table per chunk.

The table may be stored in a narrower dtype than the plan (bf16 rows, float32 plan): rows
are widened when gathered and rounded once per chunk when scattered back, as the kernel does.
The table's cotangent is stored like the table (in its dtype) between chunks and widened
for each chunk's float32 arithmetic: a bf16 table has a bf16 cotangent, as a bf16 array
has in any JAX program, and the backward moves half the bytes.
"""

from __future__ import annotations

import functools

import jax
from jax import lax
import jax.numpy as jnp

from pallas_kernels.sparse_delta.plan import ChunkCoefs, ChunkIds, ChunkPlan

# The C x C products feed the recurrence: keep them in full float32 (no TF32 on GPU).
_PRECISION = lax.Precision.HIGHEST


def weighted_rows(weights: jax.Array, rows: jax.Array) -> jax.Array:
  """sum_i weights[..., i] * rows[..., i, :], as exact float math (no reduced-precision dot)."""
  return jnp.sum(weights[..., None] * rows, axis=-2)


def _chunk_rows(rows, ids: ChunkIds, coefs: ChunkCoefs, error):
  """The pure chunk function f: (starting rows) -> (out [C, Dv], new written rows [U, Dv]).

  rows [U + C * R, Dv]: the chunk's starting rows at `ids.slots` (U, padding rows zero),
  then at `ids.read_idx`. All of a chunk's table math is here; the backward differentiates
  it with `jax.vjp`.
  """
  num_unique = ids.slots.shape[-1]
  written = rows[:num_unique]
  read_rows = rows[num_unique:].reshape(*ids.read_idx.shape, rows.shape[-1])
  if error == "shared":
    start_estimate = weighted_rows(coefs.write_coef, written[ids.write_pos])  # r0 [C, Dv]
    delta = jnp.dot(coefs.solve, coefs.values - start_estimate, precision=_PRECISION)
  else:
    delta = coefs.values
  out = (weighted_rows(coefs.read_coef, read_rows)
         + jnp.dot(coefs.qk, delta, precision=_PRECISION))
  updates = coefs.update_coef[:, :, None] * delta[:, None, :]
  new_rows = (coefs.end_decay[:, None] * written).at[ids.write_pos].add(updates)
  return out, new_rows


def _gather_rows(table, ids: ChunkIds, dtype):
  """The rows f reads, in one gather, widened to `dtype`: one op whose result feeds the
  scatter, so XLA orders every read of the table before the in-place write (separate read
  gathers made it copy the whole table every chunk)."""
  row_ids = jnp.concatenate([ids.slots, ids.read_idx.reshape(-1)])
  return table.at[row_ids].get(mode="fill", fill_value=0).astype(dtype)


def _scatter_rows(table, slots, rows):
  return table.at[slots].set(rows.astype(table.dtype), mode="drop", indices_are_sorted=True,
                             unique_indices=True)


def _chunk_step(memory, ids: ChunkIds, coefs: ChunkCoefs, error):
  rows = _gather_rows(memory, ids, coefs.values.dtype)
  out, new_rows = _chunk_rows(rows, ids, coefs, error)
  written = rows[:ids.slots.shape[-1]].astype(memory.dtype)
  return _scatter_rows(memory, ids.slots, new_rows), out, written


def _add_read_cotangents(d_memory, read_ids, d_read_rows):
  """d_memory[read_ids[e]] += d_read_rows[e]; d_read_rows [E, Dv] in the plan's dtype.

  A cotangent stored narrower than the plan (bf16) is summed per slot in the plan's dtype
  first, so each row is rounded once per chunk (as the kernel does), not once per read.
  """
  if d_memory.dtype == d_read_rows.dtype:
    return d_memory.at[read_ids].add(d_read_rows)
  num_slots, num_reads = d_memory.shape[0], read_ids.shape[0]
  slots, where = jnp.unique(read_ids, size=num_reads, fill_value=num_slots, return_inverse=True)
  sums = jax.ops.segment_sum(d_read_rows, where.reshape(-1), num_segments=num_reads)
  current = d_memory.at[slots].get(mode="fill", fill_value=0).astype(d_read_rows.dtype)
  return d_memory.at[slots].set((current + sums).astype(d_memory.dtype), mode="drop")


@functools.partial(jax.custom_vjp, nondiff_argnums=(3,))
def _scan_sequence(memory, ids: ChunkIds, coefs: ChunkCoefs, error: str):
  """Phase 2 for one sequence and head: memory [N, Dv], plan [n_chunks, ...]."""

  def step(memory, chunk):
    memory, out, _ = _chunk_step(memory, *chunk, error)
    return memory, out

  memory, out = lax.scan(step, memory, (ids, coefs))
  return out, memory


def _scan_sequence_fwd(memory, ids, coefs, error):
  def step(memory, chunk):
    memory, out, written = _chunk_step(memory, *chunk, error)
    return memory, (out, written)

  memory, (out, snapshots) = lax.scan(step, memory, (ids, coefs))
  return (out, memory), (ids, coefs, snapshots, memory)


def _scan_sequence_bwd(error, residuals, cotangents):
  ids, coefs, snapshots, final_memory = residuals
  d_out, d_final_memory = cotangents
  dtype = coefs.values.dtype

  def step(carry, chunk):
    memory, d_memory = carry
    ids_c, coefs_c, written, d_out_c = chunk
    memory = _scatter_rows(memory, ids_c.slots, written)  # undo the chunk's writes
    rows = _gather_rows(memory, ids_c, dtype)
    _, chunk_vjp = jax.vjp(lambda r, c: _chunk_rows(r, ids_c, c, error), rows, coefs_c)
    d_new_rows = d_memory.at[ids_c.slots].get(mode="fill", fill_value=0).astype(dtype)
    d_rows, d_coefs = chunk_vjp((d_out_c, d_new_rows))
    # The rows the chunk wrote reach its end only through f; read rows add on top.
    num_unique = ids_c.slots.shape[-1]
    d_memory = _scatter_rows(d_memory, ids_c.slots, d_rows[:num_unique])
    d_memory = _add_read_cotangents(d_memory, ids_c.read_idx.reshape(-1), d_rows[num_unique:])
    return (memory, d_memory), d_coefs

  (_, d_memory), d_coefs = lax.scan(
      step, (final_memory, d_final_memory.astype(final_memory.dtype)),
      (ids, coefs, snapshots, d_out), reverse=True)
  return d_memory, None, d_coefs


_scan_sequence.defvjp(_scan_sequence_fwd, _scan_sequence_bwd)


def scan_chunks(memory: jax.Array, plan: ChunkPlan, *, error: str, out_dtype=None
                ) -> tuple[jax.Array, jax.Array]:
  """Phase 2: memory [B, H, N, Dv] (any float dtype), plan [B, H, n_chunks, ...].

  Returns out [B, H, n_chunks, C, Dv] in out_dtype (default: the plan's dtype) and the
  final memory [B, H, N, Dv] in memory's dtype.
  """
  scan_one = lambda m, i, c: _scan_sequence(m, i, c, error)
  out, final = jax.vmap(jax.vmap(scan_one))(memory, *plan)
  return out.astype(out_dtype or out.dtype), final
