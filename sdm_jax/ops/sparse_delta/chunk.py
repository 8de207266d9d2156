"""The sparse delta rule by chunks of C tokens, with an undo-writes backward (DESIGN.md 3.4).

Within a chunk with starting table M0, let L_t(s) be slot s's cumulative log decay over the
chunk's writes up to and including token t (it moves only at tokens that write s). Then

  A[u, w]  = sum_{s in I_u & I_w} k_u(s) k_w(s) exp(L_u(s) - L_w(s))          (w < u)
  QK[t, u] = sum_{s in J_t & I_u} q_t(s) k_u(s) exp(L_t(s) - L_u(s))          (u <= t)
  delta    = (I + diag(beta) A)^-1 diag(beta) (V - r0),  r0[u] = sum_i k_u[i] exp(L_u) M0[I_u[i]]
  out[t]   = sum_j q_t[j] exp(L_t) M0[J_t[j]] + sum_u QK[t, u] delta[u]
  M[s]     = exp(L_C(s)) M0[s] + sum_{u: s in I_u} k_u(s) exp(L_C(s) - L_u(s)) delta[u]

The per-slot form has no solve: delta = beta V, and the log decay of slot s at token u is
log(alpha_u (1 - beta_u k_u(s))). Every decay factor is exp of a difference of cumulative
sums along a matched pair (never exp(-L), which overflows when a slot is written often).

Phase 1 (`plan_chunks`, here) computes everything that does not depend on the table, for
all chunks at once, from one sort per chunk of its writes and reads by slot: the writes of
one slot form a segment, L is a sum along it (never a [U, C] table of every slot and
token; the XLA pair weights build one), and the pair weights walk the segments
(`pallas_kernels.sparse_delta.pair_weights`). Phase 2 applies the plan to the table chunk
after chunk, with an undo-writes backward (`PHASE2`): `pallas_kernels.sparse_delta.scan_xla`
(a `lax.scan` of gathers and scatters, impl "chunked"), `scan_pallas` (Triton kernels per
chunk, impl "pallas_gpu") or `scan_pallas_tpu` (Mosaic kernels over all chunks, impl
"pallas_tpu").
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
from jax import lax
import jax.numpy as jnp

from pallas_kernels.blocks import is_power_of_two, next_power_of_two
from pallas_kernels.sparse_delta import layout
from pallas_kernels.sparse_delta import pair_weights
from pallas_kernels.sparse_delta import scan_pallas
from pallas_kernels.sparse_delta import scan_pallas_tpu
from pallas_kernels.sparse_delta import scan_xla
from pallas_kernels.sparse_delta.plan import ChunkCoefs, ChunkIds, ChunkPlan
from sdm_jax.ops import dispatch
from sdm_jax.ops.sparse_delta import checks
from sdm_jax.ops.triangular import unit_lower_triangular_inverse

# Phase 2 of each chunked impl: scan_chunks(memory [B, H, N, Dv], plan, error=, out_dtype=)
# -> (out [B, H, n_chunks, C, Dv] in out_dtype, final memory). The kernels also take an
# unbroadcast [H, N, Dv] table.
PHASE2 = {"chunked": scan_xla.scan_chunks, "pallas_gpu": scan_pallas.scan_chunks,
          "pallas_tpu": scan_pallas_tpu.scan_chunks}
KERNEL_LIMITS = {"pallas_gpu": scan_pallas.kernel_limits,
                 "pallas_tpu": scan_pallas_tpu.kernel_limits}
MAX_KERNEL_CHUNK = min(scan_pallas.MAX_CHUNK, scan_pallas_tpu.MAX_CHUNK)
# How each impl computes phase 1's pair weights: the GPU kernel's impl with the forward
# and backward kernels (`pair_weights`, "pallas"; interpret mode off the GPU), the others
# in XLA with its autodiff ("xla"). On the H200 the backward kernel lowered the layer's
# fwd+bwd peak from 4.95 to 4.34 GB (sdm_small's layer) and 13.56 to 13.19 GB (d = 2048,
# N = 262,144) at 26.0 vs 26.2 and 46.4 vs 47.5 ms (WORKSPACE.md, issue 11).
PAIR_IMPL = {"chunked": "xla", "pallas_gpu": "pallas", "pallas_tpu": "xla"}

# The C x C products feed the recurrence: keep them in full float32 (no TF32 on GPU).
_PRECISION = lax.Precision.HIGHEST
# Per-slot decay log(1 - beta k) is -inf at beta k = 1 (a full overwrite, reachable once
# bf16 rounds beta and k to 1). There it is replaced by this floor, so differences of
# cumulative sums stay finite: exp(-80) ~ 2e-35 leaves ~0 of the overwritten row either
# way, but no gradient flows through that token's retention.
_MIN_LOG_RETENTION = -80.0


class _EntryIds(NamedTuple):
  """What one chunk's sort gives beside its `ChunkIds`."""
  read_writer: jax.Array  # [C, R] the read's slot's last write at or before its token:
  #                         its index among the slot-sorted writes, -1 if none
  write_rows: jax.Array   # [C * W] the row of each slot-sorted write (nondecreasing)
  row_begin: jax.Array    # [U + 2] first slot-sorted write of each row, then C * W


def _sort_order(slot, minor, *, num_slots: int, chunk: int):
  """[E] the stable order of entries by (slot, minor), minor in [0, 2 * chunk).

  Where slot, minor and the entry's own index fit in one int32 key, an unstable sort of
  that key alone: the keys are distinct, so its order is the stable one, and a sort of one
  operand moves half the data of a key sorted with the indices beside it (at `sdm_small`'s
  shapes the plan's sort of [2048, 2048] keys took 0.21 ms a layer on an H100 with two
  operands, session 53's profile). Else (slot, minor) as one key, or two, with the
  indices."""
  entries = slot.shape[-1]
  entry = jnp.arange(entries, dtype=jnp.int32)
  limit = jnp.iinfo(jnp.int32).max
  if num_slots * 2 * chunk * entries <= limit:
    key = (slot * (2 * chunk) + minor) * entries + entry
    return lax.rem(lax.sort(key, is_stable=False), jnp.int32(entries))
  keys = ((slot * (2 * chunk) + minor,) if num_slots * 2 * chunk <= limit else (slot, minor))
  *_, order = lax.sort((*keys, entry), num_keys=len(keys), is_stable=True)
  return order


def _chunk_ids(write_idx, read_idx, *, num_slots):
  """The integer part of one chunk's plan: write_idx [C, W], read_idx [C, R] ->
  (ChunkIds, _EntryIds).

  One stable sort of the writes and reads together by (slot, token, reads after writes)
  gives every order phase 1 and the kernels need: the slot-sorted writes (their segments
  are the unique written slots), the slot-sorted reads, and for each read the writes of its
  slot before and after it."""
  chunk, num_writes = write_idx.shape
  num_reads = read_idx.shape[1]
  num_unique = chunk * num_writes
  write_ids = write_idx.reshape(-1).astype(jnp.int32)
  read_ids = read_idx.reshape(-1).astype(jnp.int32)
  tokens = lambda x: jnp.repeat(jnp.arange(chunk, dtype=jnp.int32), x)  # noqa: E731
  slot = jnp.concatenate([write_ids, read_ids])
  minor = jnp.concatenate([2 * tokens(num_writes), 2 * tokens(num_reads) + 1])
  order = _sort_order(slot, minor, num_slots=num_slots, chunk=chunk)
  entry = jnp.arange(slot.size, dtype=jnp.int32)
  is_read = order >= num_unique
  writes_so_far = jnp.cumsum(~is_read, dtype=jnp.int32)  # writes at or before each entry
  # Write entry e of the sorted list is write (t, i) = write_order[e]; reads likewise.
  write_order = jnp.zeros((num_unique,), jnp.int32).at[
      jnp.where(is_read, num_unique, writes_so_far - 1)].set(order, mode="drop")
  read_rank = entry - writes_so_far
  read_order = jnp.zeros((num_reads * chunk,), jnp.int32).at[
      jnp.where(is_read, read_rank, read_ids.size)].set(order - num_unique, mode="drop")
  # Where each entry sorts among all: each write's place among the sorted writes, each
  # read's sorted-read rank and what the sort gives each read are gathers from it.
  sorted_at = layout.inverse_order(order)
  write_inverse = writes_so_far[sorted_at[:num_unique]] - 1
  read_entry = sorted_at[num_unique:]
  sorted_ids = write_ids[write_order]
  # The position of each sorted write's slot among the unique written slots.
  position = jnp.cumsum(layout.segment_starts(sorted_ids).astype(jnp.int32)) - 1
  write_pos = position[write_inverse].reshape(chunk, num_writes)
  # Distinct out-of-range padding ids after the real slots: gathers fill them with zeros,
  # scatters drop them, and the slots stay sorted and unique, which both are promised.
  slots = (num_slots + jnp.arange(num_unique, dtype=jnp.int32)).at[position].set(sorted_ids)
  # A read's slot has a row if a write of it sorts just before the read (at or before its
  # token) or just after it (a later token).
  before = jnp.maximum(writes_so_far - 1, 0)
  after = jnp.minimum(writes_so_far, num_unique - 1)
  slot_sorted = slot[order]
  written_before = (writes_so_far > 0) & (sorted_ids[before] == slot_sorted)
  written_after = (writes_so_far < num_unique) & (sorted_ids[after] == slot_sorted)
  row = jnp.where(written_before, position[before],
                  jnp.where(written_after, position[after], num_unique))
  writer = jnp.where(written_before, before, -1)
  unsort_reads = lambda x: x[read_entry].reshape(read_idx.shape)  # noqa: E731
  row_begin = layout.tile_starts(position, num_unique + 1, 1)
  ids = ChunkIds(slots=slots, write_pos=write_pos, read_idx=read_idx, write_order=write_order,
                 read_order=read_order, read_pos=unsort_reads(row),
                 write_inverse=write_inverse, read_inverse=read_rank[read_entry])
  return ids, _EntryIds(unsort_reads(writer), position, row_begin)


def _log_decay(write_w, beta, g, *, error):
  """[C, W] each write's log decay of its slot: g (shared form) or g + log(1 - beta k)."""
  if error == "shared":
    return jnp.broadcast_to(g[:, None], write_w.shape)
  erased = beta[:, None] * write_w
  overwrite = erased >= 1
  # The inner where keeps log1p's gradient finite where the outer one discards it.
  retention = jnp.log1p(-jnp.where(overwrite, 0, erased))
  retention = jnp.where(overwrite, _MIN_LOG_RETENTION,
                        jnp.maximum(retention, _MIN_LOG_RETENTION))
  return g[:, None] + retention


def _segment_cumsum(x, segment_start, max_length: int):
  """Inclusive sums of x [E] within contiguous segments (segment_start [E]: the first
  entry of each entry's segment) no longer than max_length: Hillis-Steele steps, each sum
  exact to rounding within its own segment (never a difference of running totals)."""
  entry = jnp.arange(x.shape[0])
  step = 1
  while step < max_length:
    shifted = jnp.concatenate([jnp.zeros((step,), x.dtype), x[:-step]])
    x = x + jnp.where(entry - step >= segment_start, shifted, 0)
    step *= 2
  return x


def _entry_logs(log_decay, write_order: layout.Permutation, entry_ids: _EntryIds):
  """The chunks' cumulative log decays: log_decay [n, C, W] -> (cum_log [n, C * W] at the
  slot-sorted writes, write_log [n, C, W], later_log [n, C, W], read_log [n, C, R],
  end_log [n, U]): L_u(s) of each write, L_C(s) - L_u(s) of each write (summed over the
  slot's later writes, not subtracted), L_t(s) of each read (0 if the chunk writes s only
  later or never) and L_C(s) of each row.

  Batched over chunks outside the per-chunk sums: the permutations and each row's last
  entry are then flat gathers whose transposes are gathers too (`layout.matched_gather`),
  not XLA's batched scatters."""
  n, chunk, num_writes = log_decay.shape
  steps = layout.permuted(log_decay.reshape(n, -1), write_order)
  cum_log, later, read_log = jax.vmap(functools.partial(_sorted_logs, chunk=chunk))(
      steps, entry_ids)
  rows, begin = entry_ids.write_rows, entry_ids.row_begin
  # Row r's last entry (-1 for an empty row), and each entry's row if it is its row's last.
  last = jnp.where(begin[:, 1:-1] > begin[:, :-2], begin[:, 1:-1] - 1, -1)
  is_last = jnp.concatenate([rows[:, 1:] != rows[:, :-1], jnp.ones((n, 1), bool)], axis=1)
  end_log = layout.matched_gather(cum_log, last, jnp.where(is_last, rows, -1))
  token_major = lambda x: layout.unpermuted(x, write_order).reshape(  # noqa: E731
      n, chunk, num_writes)
  return cum_log, token_major(cum_log), token_major(later), read_log, end_log


def _sorted_logs(steps, entry_ids: _EntryIds, *, chunk: int):
  """One chunk's sums over its slot-sorted write steps [C * W] (`_entry_logs`): (cum_log,
  later, read_log)."""
  rows, begin = entry_ids.write_rows, entry_ids.row_begin
  num_entries = rows.shape[0]
  cum_log = _segment_cumsum(steps, begin[rows], chunk)
  # The slot's steps after each write: a suffix sum (reversed scan) of the next entry's step.
  same_as_next = jnp.concatenate([rows[1:] == rows[:-1], jnp.zeros((1,), bool)])
  next_step = jnp.where(same_as_next, jnp.concatenate([steps[1:], steps[:1]]), 0)
  reversed_start = (num_entries - begin[rows + 1])[::-1]
  later = _segment_cumsum(next_step[::-1], reversed_start, chunk)[::-1]
  writer = entry_ids.read_writer
  read_log = jnp.where(writer >= 0, cum_log[jnp.maximum(writer, 0)], 0)
  return cum_log, later, read_log


def _coefficients(write_w, write_log, later_log, v, beta, read_w, read_log, end_log, qk, attn,
                  *, error) -> ChunkCoefs:
  """The rest of one chunk's coefficients, given the log decays at its entries and its
  slots' (`_entry_logs`) and its pair weights."""
  if error == "shared":
    solve = unit_lower_triangular_inverse(beta[:, None] * attn,
                                          precision=_PRECISION) * beta[None, :]
    write_coef = write_w * jnp.exp(write_log)
    values = v
  else:
    solve = write_coef = None
    values = beta[:, None] * v
  return ChunkCoefs(
      write_coef=write_coef,
      solve=solve,
      read_coef=read_w * jnp.exp(read_log),
      qk=qk,
      update_coef=write_w * jnp.exp(later_log),
      end_decay=jnp.exp(end_log),
      values=values,
  )


def plan_chunks(write_idx, write_w, v, beta, g, read_idx, read_w, *, num_slots: int,
                chunk_size: int, error: str, shorten: bool = True,
                pair_impl: str = "xla") -> ChunkPlan:
  """Phase 1 for every chunk at once, batched over B, H and chunks.

  Takes canonical token arrays [B, T, H, ...] (see `checks.canonicalize_inputs`); returns
  a plan with leading axes [B, H, n_chunks] and chunks of C = min(chunk_size, T) tokens
  (C = chunk_size if not `shorten`). T is padded to a multiple of C with tokens that change
  nothing (zero weights, beta and g). pair_impl: how the pair weights (QK, A) are
  computed and differentiated, "xla" or "pallas" (`pallas_kernels.sparse_delta.pair_weights`).
  """
  batch, seq_len, heads, num_writes = write_idx.shape
  chunk = min(chunk_size, seq_len) if shorten else chunk_size
  num_chunks = -(-seq_len // chunk)
  pad = num_chunks * chunk - seq_len

  def to_chunks(x):
    x = jnp.moveaxis(x, 2, 1)  # [B, H, T, ...]
    x = jnp.pad(x, [(0, 0), (0, 0), (0, pad)] + [(0, 0)] * (x.ndim - 3))
    return x.reshape(batch * heads * num_chunks, chunk, *x.shape[3:])

  # Padding tokens still write W distinct (in-range) ids, with zero weight.
  is_pad = jnp.arange(num_chunks * chunk) >= seq_len
  write_ids = to_chunks(write_idx).reshape(batch * heads, num_chunks * chunk, num_writes)
  write_ids = jnp.where(is_pad[:, None], jnp.arange(num_writes, dtype=jnp.int32), write_ids)
  write_ids = write_ids.reshape(-1, chunk, num_writes)
  write_w, v, beta, g, read_idx, read_w = map(to_chunks, (write_w, v, beta, g, read_idx,
                                                           read_w))

  ids, entry_ids = jax.vmap(functools.partial(_chunk_ids, num_slots=num_slots))(write_ids,
                                                                               read_idx)
  log_decay = jax.vmap(functools.partial(_log_decay, error=error))(write_w, beta, g)
  cum_log, write_log, later_log, read_log, end_log = _entry_logs(
      log_decay, ids.write_permutation, entry_ids)
  flat = lambda x: x.reshape(x.shape[0], -1)  # noqa: E731
  segments = pair_weights.SlotSegments(
      begin=entry_ids.row_begin, row=entry_ids.write_rows,
      token=ids.write_order // num_writes,
      key=layout.permuted(flat(write_w), ids.write_permutation), cum_log=cum_log)
  pair = functools.partial(pair_weights.pair_weights, segments=segments, impl=pair_impl)
  qk = pair(ids.read_pos, read_w, read_log, order=ids.read_permutation, strict=False)
  attn = None
  if error == "shared":
    # A's entries are the writes themselves: its backward walks each write's segment in
    # the write's own lane (`pair_weights`' own_writes).
    attn = pair(ids.write_pos, write_w, write_log, order=ids.write_permutation, strict=True,
                own_writes=True)
  coefs = jax.vmap(functools.partial(_coefficients, error=error))(
      write_w, write_log, later_log, v, beta, read_w, read_log, end_log, qk, attn)
  plan = ChunkPlan(ids, coefs)
  return jax.tree.map(lambda x: x.reshape(batch, heads, num_chunks, *x.shape[1:]), plan)


@functools.partial(jax.jit, static_argnames=("chunk_size", "error", "impl", "out_dtype"))
def _chunked(inputs: checks.SparseDeltaInputs, chunk_size: int, error: str, impl: str,
             out_dtype):
  """Plan, scan and reassemble [B, T, H, Dv] in out_dtype; `inputs` are canonical (see
  checks), the table [B, H, N, Dv] or [H, N, Dv]. impl: a key of `PHASE2`."""
  batch, seq_len, heads, _ = inputs.write_idx.shape
  num_slots = inputs.memory.shape[-2]
  plan = plan_chunks(*inputs[1:], num_slots=num_slots, chunk_size=chunk_size, error=error,
                     shorten=impl == "chunked", pair_impl=PAIR_IMPL[impl])
  memory = inputs.memory
  if impl == "chunked":
    # The kernels take a shared table unbroadcast: its gradient sums over B in float32.
    memory = jnp.broadcast_to(memory, (batch, heads, *memory.shape[-2:]))
  # The outputs in v's dtype straight from phase 2: the Pallas kernels store them so, and
  # their backward then reads the outputs' cotangent in that dtype too (no float32 copy).
  out, final_memory = PHASE2[impl](memory, plan, error=error, out_dtype=out_dtype)
  out = out.reshape(batch, heads, -1, out.shape[-1])[:, :, :seq_len]
  return jnp.moveaxis(out, 2, 1), final_memory


def kernel_chunk(chunk_size: int, seq_len: int) -> int:
  """The kernel's chunk length: chunk_size, or for a shorter sequence the power of two
  (>= 16) that holds it; the sequence is padded with tokens that change nothing."""
  return min(chunk_size, max(16, next_power_of_two(seq_len)))


def pallas_unsupported(memory, v, chunk_size: int, accumulation, family: str = "pallas_gpu"
                       ) -> str | None:
  """Why the kernel family ("pallas_gpu" or "pallas_tpu") cannot run on these inputs (the
  op's `memory` and `v`), or None."""
  if not is_power_of_two(chunk_size) or not 16 <= chunk_size <= MAX_KERNEL_CHUNK:
    return (f"chunk_size must be a power of two in [16, {MAX_KERNEL_CHUNK}], got "
            f"{chunk_size}")
  return KERNEL_LIMITS[family](
      chunk=kernel_chunk(chunk_size, v.shape[1]), value_dim=memory.shape[-1],
      table_dtype=checks.storage_dtype(memory.dtype, accumulation), plan_dtype=accumulation)


def sparse_delta_rule_chunked(memory, write_idx, write_w, v, beta, g, read_idx, read_w, *,
                              chunk_size: int = 32, error: str = "shared",
                              impl: str = "chunked") -> tuple[jax.Array, jax.Array]:
  """The sparse delta rule by chunks; same contract as `sparse_delta_rule`.

  impl: "chunked" (phase 2 in XLA) or a Pallas kernel family: "pallas_gpu", "pallas_tpu"
  or "pallas" (the family of this platform); a ValueError names the limit when the
  kernels cannot take the inputs (see `pallas_unsupported`).
  """
  checks.check_error_form(error)
  checks.check_chunk_size(chunk_size)
  impls = ("chunked",) + dispatch.PALLAS_IMPLS
  if impl not in impls:
    raise ValueError(f"impl must be one of {impls}, got {impl!r}")
  requested = impl
  impl = dispatch.resolve_impl(impl, impls, xla="chunked")
  inputs, accumulation = checks.canonicalize_inputs(
      memory, write_idx, write_w, v, beta, g, read_idx, read_w, time_axis=True,
      broadcast_memory=False)
  batch, seq_len, heads, _ = inputs.write_idx.shape
  if seq_len == 0:
    final = jnp.broadcast_to(inputs.memory, (batch, heads, *inputs.memory.shape[-2:]))
    return jnp.zeros(v.shape, v.dtype), final
  if impl != "chunked":
    reason = pallas_unsupported(memory, v, chunk_size, accumulation, impl)
    if reason:
      raise ValueError(f"impl={requested!r} cannot run these inputs: {reason}")
    chunk_size = kernel_chunk(chunk_size, seq_len)
  return _chunked(inputs, chunk_size, error, impl, jnp.dtype(v.dtype))
