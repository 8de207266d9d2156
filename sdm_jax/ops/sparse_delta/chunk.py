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
all chunks at once. Phase 2 applies the plan to the table chunk after chunk, with an
undo-writes backward (`PHASE2`): `pallas_kernels.sparse_delta.scan_xla` (a `lax.scan` of
gathers and scatters, impl "chunked"), `scan_pallas` (Triton kernels per chunk, impl
"pallas_gpu") or `scan_pallas_tpu` (Mosaic kernels over all chunks, impl "pallas_tpu").
"""

from __future__ import annotations

import functools

import jax
from jax import lax
import jax.numpy as jnp

from pallas_kernels.blocks import is_power_of_two, next_power_of_two
from pallas_kernels.sparse_delta import pair_weights
from pallas_kernels.sparse_delta import scan_pallas
from pallas_kernels.sparse_delta import scan_pallas_tpu
from pallas_kernels.sparse_delta import scan_xla
from pallas_kernels.sparse_delta.plan import ChunkCoefs, ChunkIds, ChunkPlan
from sdm_jax.ops import dispatch
from sdm_jax.ops.sparse_delta import checks
from sdm_jax.ops.triangular import unit_lower_triangular_inverse

# Phase 2 of each chunked impl: scan_chunks(memory [B, H, N, Dv], plan, error=) ->
# (out [B, H, n_chunks, C, Dv], final memory). The kernels also take an unbroadcast
# [H, N, Dv] table.
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


def _chunk_ids(write_idx, read_idx, *, num_slots):
  """The integer part of one chunk's plan: write_idx [C, W], read_idx [C, R] ->
  (ChunkIds, read_pos [C, R]: each read's row among the unique written slots, U if the
  chunk does not write it)."""
  chunk, num_writes = write_idx.shape
  num_unique = chunk * num_writes
  # The chunk's unique written slots, by one stable sort whose order the kernels' layout
  # reuses (`ChunkIds.write_order`): entry e of the sorted list is write (t, i) = order[e].
  flat_ids = write_idx.reshape(-1).astype(jnp.int32)
  write_order = jnp.argsort(flat_ids, stable=True).astype(jnp.int32)
  sorted_ids = flat_ids[write_order]
  starts = jnp.concatenate([jnp.ones((1,), bool), sorted_ids[1:] != sorted_ids[:-1]])
  position = jnp.cumsum(starts.astype(jnp.int32)) - 1  # of each sorted entry's slot
  write_pos = jnp.zeros_like(position).at[write_order].set(position).reshape(chunk, num_writes)
  # Distinct out-of-range padding ids after the real slots: gathers fill them with zeros,
  # scatters drop them, and the slots stay sorted and unique, which both are promised.
  slots = (num_slots + jnp.arange(num_unique, dtype=jnp.int32)).at[position].set(sorted_ids)
  # By one sort rather than the default binary search (a while loop of small kernels on
  # a GPU).
  read_pos = jnp.searchsorted(slots, read_idx.reshape(-1), method="sort").reshape(
      read_idx.shape)
  found = slots[jnp.minimum(read_pos, num_unique - 1)] == read_idx
  # Reads of slots the chunk does not write point at an extra all-zero row.
  read_pos = jnp.where(found, read_pos, num_unique)
  read_order = jnp.argsort(read_idx.reshape(-1), stable=True).astype(jnp.int32)
  return ChunkIds(slots, write_pos, read_idx, write_order, read_order), read_pos


def _slot_tables(write_pos, write_w, beta, g, *, error):
  """Slot-major tables over one chunk's unique written slots, one column per token:
  key_table, cum_log_decay [U + 1, C] (k_u(s) and L_u(s); row U stays zero)."""
  chunk = write_pos.shape[0]
  if error == "shared":
    log_decay = jnp.broadcast_to(g[:, None], write_w.shape)
  else:
    erased = beta[:, None] * write_w
    overwrite = erased >= 1
    # The inner where keeps log1p's gradient finite where the outer one discards it.
    retention = jnp.log1p(-jnp.where(overwrite, 0, erased))
    retention = jnp.where(overwrite, _MIN_LOG_RETENTION,
                          jnp.maximum(retention, _MIN_LOG_RETENTION))
    log_decay = g[:, None] + retention
  token = jnp.broadcast_to(jnp.arange(chunk)[:, None], write_pos.shape)
  empty = jnp.zeros((write_pos.size + 1, chunk), write_w.dtype)
  key_table = empty.at[write_pos, token].add(write_w)
  cum_log_decay = jnp.cumsum(empty.at[write_pos, token].add(log_decay), axis=1)
  return key_table, cum_log_decay


def _log_at(cum_log_decay, pos):
  """L_t(s) of each entry (t, x) of pos [C, X]: the table at (pos[t, x], t)."""
  return cum_log_decay[pos, jnp.arange(pos.shape[0])[:, None]]


def _coefficients(write_pos, write_w, write_log, v, beta, read_w, read_log, cum_log_decay, qk,
                  attn, *, error) -> ChunkCoefs:
  """The rest of one chunk's coefficients, given its tables, the log decays at its
  entries (`_log_at`) and its pair weights."""
  end_log = cum_log_decay[:, -1]
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
      update_coef=write_w * jnp.exp(end_log[write_pos] - write_log),
      end_decay=jnp.exp(end_log[:write_pos.size]),
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

  ids, read_pos = jax.vmap(functools.partial(_chunk_ids, num_slots=num_slots))(write_ids,
                                                                                read_idx)
  key_table, cum_log_decay = jax.vmap(functools.partial(_slot_tables, error=error))(
      ids.write_pos, write_w, beta, g)
  write_log = jax.vmap(_log_at)(cum_log_decay, ids.write_pos)
  read_log = jax.vmap(_log_at)(cum_log_decay, read_pos)
  pair = functools.partial(pair_weights.pair_weights, key_table=key_table,
                           cum_log_decay=cum_log_decay, impl=pair_impl)
  qk = pair(read_pos, read_w, read_log, order=ids.read_order, strict=False)
  attn = None
  if error == "shared":
    attn = pair(ids.write_pos, write_w, write_log, order=ids.write_order, strict=True)
  coefs = jax.vmap(functools.partial(_coefficients, error=error))(
      ids.write_pos, write_w, write_log, v, beta, read_w, read_log, cum_log_decay, qk, attn)
  plan = ChunkPlan(ids, coefs)
  return jax.tree.map(lambda x: x.reshape(batch, heads, num_chunks, *x.shape[1:]), plan)


@functools.partial(jax.jit, static_argnames=("chunk_size", "error", "impl"))
def _chunked(inputs: checks.SparseDeltaInputs, chunk_size: int, error: str, impl: str):
  """Plan, scan and reassemble [B, T, H, Dv]; `inputs` are canonical (see checks), the
  table [B, H, N, Dv] or [H, N, Dv]. impl: a key of `PHASE2`."""
  batch, seq_len, heads, _ = inputs.write_idx.shape
  num_slots = inputs.memory.shape[-2]
  plan = plan_chunks(*inputs[1:], num_slots=num_slots, chunk_size=chunk_size, error=error,
                     shorten=impl == "chunked", pair_impl=PAIR_IMPL[impl])
  memory = inputs.memory
  if impl == "chunked":
    # The kernels take a shared table unbroadcast: its gradient sums over B in float32.
    memory = jnp.broadcast_to(memory, (batch, heads, *memory.shape[-2:]))
  out, final_memory = PHASE2[impl](memory, plan, error=error)
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
  out, final_memory = _chunked(inputs, chunk_size, error, impl)
  return out.astype(v.dtype), final_memory
