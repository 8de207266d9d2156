"""Single-query attention over a decode cache as a Pallas kernel (Triton on GPU).

One query per sequence and head reads a cache k, v [B, L, H, D] in the layout the decode
step keeps it (no transpose: XLA's dot, and JAX's shipped `pallas.ops.gpu.decode_attention`,
first move the heads in front, copying the whole cache). With one query per (b, h) there is
little parallelism, so the cache is split along L ("split-K" or flash-decoding): grid
(B, H, splits), each program walks its span of slots in blocks of `block_k` with an online
softmax and writes its partial result,

  m_s = max scores,   l_s = sum exp(score - m_s),   acc_s = sum exp(score - m_s) v,

and a second small kernel combines the splits (one launch where XLA took three reductions
and a padding, the same speed on the H200: WORKSPACE.md, issue 15, session 20):
o = sum_s e^(m_s - M) acc_s / sum_s e^(m_s - M) l_s, M = max m_s.
Scores are q . k (float32 products summed over D: one query gives no matmul), masked by
the slots' positions with `decode_xla.visible`, the rule of both paths. Loads of keys and
values are masked by visibility, so empty slots (position < 0, a cache not yet full) and
slots outside the window cost no bandwidth. A query that sees no key gets zeros, as in the twin.

`append_and_attend` is a whole decode step of the `A` / `S` layers in one launch, followed
by the splits' combine as above: from the raw projections of the new token it forms q and
k (RMS norm, rotary) in each program, writes k, v and the position into the cache's
ring-buffer slot in place (the cache is aliased to the outputs) and attends over the
updated cache, so XLA runs no norm, rotary or cache-update ops around it (8 small launches
fewer per step; on the H200 the batch-1 step 10-24% faster; WORKSPACE.md, issue 15,
session 19). Its reference is the layer's own path: norm, rotary, the cache write, then
`single_query_attention`.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as pltriton
import jax.numpy as jnp

from pallas_kernels import platform
from pallas_kernels.attention import decode_xla
from pallas_kernels.blocks import check_power_of_two_fields, is_power_of_two, next_power_of_two


class KernelConfig(NamedTuple):
  """Tiling of the kernel (block_k and num_warps powers of two)."""
  block_k: int = 64          # cache slots per step of a program's loop
  num_warps: int = 4
  num_stages: int = 1        # Triton software pipelining of the loop (1: none)
  min_programs: int = 512    # the cache is split until B * H * splits reaches this


def check_config(config: KernelConfig) -> None:
  """Raises ValueError naming the first field of `config` the kernel cannot take."""
  check_power_of_two_fields(config, ("block_k", "num_warps"))
  for name in ("num_stages", "min_programs"):
    value = getattr(config, name)
    if not isinstance(value, int) or value < 1:
      raise ValueError(f"KernelConfig.{name} must be an int >= 1, got {value!r}")


def kernel_limits(*, head_dim: int, dtype) -> str | None:
  """Why the kernel cannot take these inputs, or None if it can."""
  if head_dim < 16 or not is_power_of_two(head_dim):
    return f"the head dim D must be a power of two >= 16, got {head_dim}"
  if jnp.dtype(dtype) == jnp.float64:
    return "float64 inputs take the XLA path"
  return None


def split_span(cache_len: int, programs_per_split: int, config: KernelConfig) -> int:
  """Slots per program: a multiple of block_k, small enough that B * H * splits reaches
  `config.min_programs` while the cache has blocks to spare."""
  splits = max(1, -(-config.min_programs // programs_per_split))
  span = -(-cache_len // splits)
  return -(-span // config.block_k) * config.block_k


def _online_update(carry, scores, values):
  """Folds scores [N] (-inf where not visible) and their values [N, D] into the running
  (max, sum of exp, exp-weighted sum of values) of an online softmax."""
  best, total, acc = carry
  new_best = jnp.maximum(best, jnp.max(scores))
  # While nothing is visible the running max is -inf: shift by 0 so exp gives 0, not NaN.
  shift = jnp.where(new_best == -jnp.inf, 0.0, new_best)
  weights = jnp.exp(scores - shift)                                   # [N]
  correction = jnp.exp(best - shift)
  acc = acc * correction + jnp.sum(weights[:, None] * values, axis=0)
  return new_best, total * correction + jnp.sum(weights), acc


def _attend_span(k_ref, v_ref, k_pos_ref, query, b, h, q_pos, first, *, span: int,
                 block_k: int, window: int | None, scale: float, skip_slot=None):
  """The online softmax of query [D] over cache slots [first, first + span) of (b, h), in
  blocks of block_k; slot `skip_slot` (if given) counts as not visible. Returns (max, sum,
  acc [D]) in float32.

  Each step loads the next block's slot positions and issues the values' load with the
  keys', so neither waits on a load of its own step (loading positions, keys, then values
  in turn was 3% slower at B 8, 32K on the H200 and no faster elsewhere: WORKSPACE.md,
  issue 15, session 20)."""
  cache_len, head_dim = k_ref.shape[1], k_ref.shape[-1]
  f32 = jnp.float32
  cols = jnp.arange(head_dim, dtype=jnp.int32)
  lanes = jnp.arange(block_k, dtype=jnp.int32)

  def block_slots(i):
    return first + i * block_k + lanes                                # [BK]

  def load_positions(slots):
    return pltriton.load(k_pos_ref.at[b, slots], mask=slots < cache_len, other=-1)

  def step(i, carry):
    result, k_pos = carry
    next_pos = load_positions(block_slots(i + 1))  # past the span on the last step: unused
    slots = block_slots(i)
    seen = decode_xla.visible(q_pos, k_pos, window)                   # [BK]
    if skip_slot is not None:
      seen &= slots != skip_slot
    rows = (b, slots[:, None], h, cols[None, :])
    mask = jnp.broadcast_to(seen[:, None], (block_k, head_dim))
    # The cache is read once per step: its lines go first from L2, so the projections'
    # weights (33 MB at d = 2048) stay there from one step to the next (on the H200 the
    # q/k/v GEMM went from 10.2 to 6.0 us a step: WORKSPACE.md, issue 15, session 22).
    load = lambda ref: pltriton.load(ref.at[rows], mask=mask, other=0,  # noqa: E731
                                     eviction_policy="evict_first").astype(f32)
    keys, values = load(k_ref), load(v_ref)                           # [BK, D] each
    scores = jnp.where(seen, jnp.sum(keys * query[None, :], axis=1) * scale, -jnp.inf)
    return _online_update(result, scores, values), next_pos

  init = (jnp.full((), -jnp.inf, f32), jnp.zeros((), f32), jnp.zeros((head_dim,), f32))
  return jax.lax.fori_loop(0, span // block_k, step,
                           (init, load_positions(block_slots(0))))[0]


def _store_partial(acc_ref, stats_ref, b, h, split, result):
  best, total, acc = result
  acc_ref[b, h, split, :] = acc
  stats_ref[b, h, split, :] = jnp.where(jnp.arange(2) == 0, best, total)


def _kernel(q_pos_ref, q_ref, k_ref, v_ref, k_pos_ref, acc_ref, stats_ref, *, span: int,
            block_k: int, window: int | None, scale: float):
  b, h, split = pl.program_id(0), pl.program_id(1), pl.program_id(2)
  query = q_ref[b, h, :].astype(jnp.float32)  # [D]
  result = _attend_span(k_ref, v_ref, k_pos_ref, query, b, h, q_pos_ref[b], split * span,
                        span=span, block_k=block_k, window=window, scale=scale)
  _store_partial(acc_ref, stats_ref, b, h, split, result)


def _merge_splits(best, total, acc):
  """The splits' (max [S], sum [S], acc [S, D]) -> o [D] float32 (zeros where no split saw
  a key)."""
  overall = jnp.max(best, axis=-1, keepdims=True)
  weight = jnp.where(best == -jnp.inf, 0.0,
                     jnp.exp(best - jnp.where(overall == -jnp.inf, 0.0, overall)))
  norm = jnp.sum(weight * total, axis=-1, keepdims=True)
  out = jnp.sum(weight[..., None] * acc, axis=-2)
  return jnp.where(norm > 0, out / jnp.where(norm > 0, norm, 1.0), 0.0)


def _combine_kernel(acc_ref, stats_ref, out_ref, *, batch: int, splits_block: int):
  """The splits of one (row, head) of grid (rows, H) merged; rows past `batch` get zeros."""
  b, h = pl.program_id(0), pl.program_id(1)
  splits, head_dim = acc_ref.shape[2], acc_ref.shape[3]
  split = jnp.arange(splits_block, dtype=jnp.int32)
  valid = split < splits
  row = jnp.minimum(b, batch - 1)
  best = pltriton.load(stats_ref.at[row, h, split, 0], mask=valid, other=-jnp.inf)
  total = pltriton.load(stats_ref.at[row, h, split, 1], mask=valid, other=0.0)
  cols = jnp.arange(head_dim, dtype=jnp.int32)
  acc = pltriton.load(acc_ref.at[row, h, split[:, None], cols[None, :]],
                      mask=jnp.broadcast_to(valid[:, None], (splits_block, head_dim)),
                      other=0.0)                                       # [SB, D]
  out = jnp.where(b < batch, _merge_splits(best, total, acc), 0.0)
  out_ref[b, 0, h, :] = out.astype(out_ref.dtype)


def _combined(acc, stats, rows: int, dtype, config: KernelConfig, interpret: bool):
  """The splits' partial results acc [B, H, splits, D], stats [B, H, splits, 2] (max, sum)
  combined into o [rows >= B, 1, H, D] in `dtype`, rows past B zero."""
  batch, heads, splits, head_dim = acc.shape
  return pl.pallas_call(
      functools.partial(_combine_kernel, batch=batch, splits_block=next_power_of_two(splits)),
      out_shape=jax.ShapeDtypeStruct((rows, 1, heads, head_dim), dtype),
      grid=(rows, heads),
      interpret=interpret,
      compiler_params=pltriton.CompilerParams(num_warps=config.num_warps, num_stages=1),
  )(acc, stats)


def _split_partials(cache_shape, config: KernelConfig):
  """(span, splits, out shapes of the partial results acc [B, H, splits, D] and stats
  [B, H, splits, 2]) of a kernel over a cache [B, L, H, D]: what both entry points launch."""
  batch, cache_len, heads, head_dim = cache_shape
  span = split_span(cache_len, batch * heads, config)
  splits = -(-cache_len // span)
  return span, splits, [
      jax.ShapeDtypeStruct((batch, heads, splits, head_dim), jnp.float32),
      jax.ShapeDtypeStruct((batch, heads, splits, 2), jnp.float32)]


@functools.partial(jax.jit, static_argnames=("window", "scale", "config", "interpret"))
def _attend(q, k, v, q_positions, k_positions, *, window, scale, config, interpret):
  batch, _, heads, _ = k.shape
  span, splits, partials = _split_partials(k.shape, config)
  acc, stats = pl.pallas_call(
      functools.partial(_kernel, span=span, block_k=config.block_k, window=window,
                        scale=scale),
      out_shape=partials,
      grid=(batch, heads, splits),
      interpret=interpret,
      compiler_params=pltriton.CompilerParams(num_warps=config.num_warps,
                                             num_stages=config.num_stages),
  )(q_positions[:, 0].astype(jnp.int32), q[:, 0], k, v, k_positions.astype(jnp.int32))
  return _combined(acc, stats, batch, q.dtype, config, interpret)


def _checked_settings(q, operands, window, scale, config, interpret):
  """The checks both entry points share; returns (scale, config, interpret) with their
  defaults filled in."""
  reason = kernel_limits(head_dim=q.shape[-1], dtype=jnp.result_type(*operands))
  if reason:
    raise ValueError(f"the decode attention kernel cannot take these inputs: {reason}")
  if window is not None and window < 1:
    raise ValueError(f"window must be >= 1 or None, got {window}")
  config = KernelConfig() if config is None else config
  check_config(config)
  if interpret is None:
    interpret = not platform.on_gpu()
  return q.shape[-1] ** -0.5 if scale is None else float(scale), config, interpret


def single_query_attention(q: jax.Array, k: jax.Array, v: jax.Array, q_positions: jax.Array,
                           k_positions: jax.Array, *, window: int | None = None,
                           scale: float | None = None, config: KernelConfig | None = None,
                           interpret: bool | None = None) -> jax.Array:
  """`decode_xla.single_query_attention` as the split-cache kernel: q [B, 1, H, D]; k, v
  [B, L, H, D]; q_positions [B, 1]; k_positions [B, L] (negative = empty). Returns [B, 1, H,
  D] in q.dtype. config: `KernelConfig()` when None (results do not depend on it);
  interpret: default unless on a GPU."""
  if q.ndim != 4 or q.shape[1] != 1:
    raise ValueError(f"q must hold one query per sequence ([B, 1, H, D]), got {q.shape}")
  if k.shape != v.shape or k.ndim != 4 or (k.shape[0], *k.shape[2:]) != (q.shape[0],
                                                                           *q.shape[2:]):
    raise ValueError(f"k and v must be [B, L, H, D] caches matching q {q.shape}, got "
                     f"{k.shape} and {v.shape}")
  scale, config, interpret = _checked_settings(q, (q, k, v), window, scale, config, interpret)
  return _attend(q, k, v, q_positions, k_positions, window=window, scale=scale,
                 config=config, interpret=interpret)


def _prepared_row(ref, part, scale_ref, b, h, position, inv_freq, *, eps):
  """Row ref[b, part, h] [D] of a raw projection as the layer forms it, in ref's dtype then
  float32: RMS-normalised times `scale_ref` (if not None), rounded, rotated by
  `position * inv_freq` (`sdm_jax.layers.rotary`: pair (i, i + D/2)), rounded."""
  head_dim = ref.shape[-1]
  half = head_dim // 2
  cols = jnp.arange(head_dim, dtype=jnp.int32)
  partner_cols = jnp.where(cols < half, cols + half, cols - half)
  row = ref[b, part, h, :].astype(jnp.float32)
  partner = pltriton.load(ref.at[b, part, h, partner_cols]).astype(jnp.float32)
  if scale_ref is not None:
    inv_rms = jax.lax.rsqrt(jnp.sum(row * row) / head_dim + eps)
    round_trip = lambda x: x.astype(ref.dtype).astype(jnp.float32)  # noqa: E731
    row = round_trip(row * inv_rms * scale_ref[:].astype(jnp.float32))
    partner = round_trip(partner * inv_rms
                         * pltriton.load(scale_ref.at[partner_cols]).astype(jnp.float32))
  angle = position.astype(jnp.float32) * inv_freq
  sign = jnp.where(cols < half, -1.0, 1.0)
  rotated = row * jnp.cos(angle) + sign * (partner * jnp.sin(angle))
  return rotated.astype(ref.dtype).astype(jnp.float32)


def _append_kernel(q_pos_ref, qkv_ref, inv_freq_ref, *refs, span: int,
                   block_k: int, window: int | None, scale: float, eps: float,
                   normalize: bool):
  if normalize:
    q_scale_ref, k_scale_ref, *refs = refs
  else:
    q_scale_ref = k_scale_ref = None
  k_ref, v_ref, k_pos_ref, acc_ref, stats_ref, k_out_ref, v_out_ref, k_pos_out_ref = refs
  b, h, split = pl.program_id(0), pl.program_id(1), pl.program_id(2)
  q_pos = q_pos_ref[b]
  target = q_pos % k_ref.shape[1]  # the new token's ring-buffer slot
  head_dim = k_ref.shape[-1]
  # [D]: pair i's frequency at columns i and i + D/2 (the layer's constant [D / 2] array,
  # read here rather than tiled by XLA: a launch per step in a scan).
  inv_freq = pltriton.load(inv_freq_ref.at[jnp.arange(head_dim, dtype=jnp.int32)
                                            % (head_dim // 2)])
  query = _prepared_row(qkv_ref, 0, q_scale_ref, b, h, q_pos, inv_freq, eps=eps)
  first = split * span
  # The loop skips the target slot (whatever it held, and whenever the stores below land);
  # its program folds the new token in from registers afterwards, formed after the loop so
  # that the loop holds no more registers than `_kernel`'s. (Substituting the new row into
  # every block instead made the loop 1.5x slower on the H200: WORKSPACE.md.)
  result = _attend_span(k_ref, v_ref, k_pos_ref, query, b, h, q_pos, first, span=span,
                        block_k=block_k, window=window, scale=scale, skip_slot=target)
  new_key = _prepared_row(qkv_ref, 1, k_scale_ref, b, h, q_pos, inv_freq, eps=eps)
  new_value = qkv_ref[b, 2, h, :].astype(v_ref.dtype).astype(jnp.float32)
  owns_target = (target >= first) & (target < first + span)
  new_score = jnp.where(owns_target & decode_xla.visible(q_pos, q_pos, window),
                        jnp.sum(query * new_key) * scale, -jnp.inf)
  result = _online_update(result, jnp.full((1,), new_score), new_value[None, :])
  _store_partial(acc_ref, stats_ref, b, h, split, result)

  @pl.when(owns_target)
  def _write_row():
    k_out_ref[b, target, h, :] = new_key.astype(k_out_ref.dtype)
    v_out_ref[b, target, h, :] = new_value.astype(v_out_ref.dtype)

  @pl.when(owns_target & (h == 0))
  def _write_position():
    k_pos_out_ref[b, target] = q_pos


@functools.partial(jax.jit, static_argnames=("window", "scale", "eps", "config", "interpret"))
def _append_and_attend(qkv, cache_k, cache_v, cache_positions, positions, inv_freq,
                       q_norm_scale, k_norm_scale, *, window, scale, eps, config, interpret):
  batch, _, heads, _ = cache_k.shape
  span, splits, partials = _split_partials(cache_k.shape, config)
  normalize = q_norm_scale is not None
  inputs = [positions[:, 0].astype(jnp.int32), qkv, inv_freq.astype(jnp.float32)]
  if normalize:
    inputs += [q_norm_scale, k_norm_scale]
  first_cache = len(inputs)
  inputs += [cache_k, cache_v, cache_positions]
  acc, stats, cache_k, cache_v, cache_positions = pl.pallas_call(
      functools.partial(_append_kernel, span=span, block_k=config.block_k, window=window,
                        scale=scale, eps=eps, normalize=normalize),
      out_shape=partials + [jax.ShapeDtypeStruct(x.shape, x.dtype)
                            for x in (cache_k, cache_v, cache_positions)],
      grid=(batch, heads, splits),
      input_output_aliases={first_cache: 2, first_cache + 1: 3, first_cache + 2: 4},
      interpret=interpret,
      compiler_params=pltriton.CompilerParams(num_warps=config.num_warps,
                                             num_stages=config.num_stages),
  )(*inputs)
  o = _combined(acc, stats, qkv.shape[0], qkv.dtype, config, interpret)
  return o, cache_k, cache_v, cache_positions


def append_and_attend(qkv: jax.Array, cache_k: jax.Array, cache_v: jax.Array,
                      cache_positions: jax.Array, positions: jax.Array, *,
                      rope_inv_freq: jax.Array, q_norm_scale: jax.Array | None = None,
                      k_norm_scale: jax.Array | None = None, norm_eps: float = 1e-6,
                      window: int | None = None, scale: float | None = None,
                      config: KernelConfig | None = None, interpret: bool | None = None):
  """One decode step of causal attention over a ring-buffer cache, in one kernel launch
  (then the splits' combine, a second small one):

    q~ = rope(norm_q(q)),  k~ = rope(norm_k(k))   at `positions` (norms only with scales),
    slot positions % L of the cache takes (k~, v, positions),
    o[b, h] = softmax_l(scale q~ . K[b, l, h] | visible) @ V[b, :, h]   (updated cache).

  norm(x) = x / sqrt(mean(x^2) + norm_eps) * scale, rounded to x's dtype; rope rotates the
  pairs (x[i], x[i + D/2]) by positions * rope_inv_freq[i], in float32, rounded to x's dtype
  (`sdm_jax.layers.norms.rms_norm`, `sdm_jax.layers.rotary.apply_rotary`: the layer's
  decode path without this kernel is the reference).

  Args:
    qkv: [B', 3, H, D] the new token's raw projections q, k, v stacked, B' >= B: rows past
      the cache's B are ignored (batch-1 decoding projects two rows), so the layer passes
      its projections' output as it is, with no slicing launch.
    cache_k, cache_v: [B, L, H, D]; cache_positions [B, L] (negative = empty). Updated in
      place when the caller donates them (a jitted decode step with its cache donated).
    positions: [B, 1] the new token's positions.
    rope_inv_freq: [D / 2] rotary frequencies.
    q_norm_scale, k_norm_scale: [D] RMS-norm scales, both or neither.
    window, scale: as `single_query_attention`.

  Returns:
    (o [B', 1, H, D] in qkv's dtype (rows past B zero, as the padded rows of a batch-1
    decode step want them), cache_k, cache_v, cache_positions).
  """
  if cache_k.ndim != 4 or cache_k.shape != cache_v.shape:
    raise ValueError(f"cache_k and cache_v must be [B, L, H, D] alike, got {cache_k.shape} "
                     f"and {cache_v.shape}")
  batch, _, heads, head_dim = cache_k.shape
  if qkv.ndim != 4 or qkv.shape[0] < batch or qkv.shape[1:] != (3, heads, head_dim):
    raise ValueError(f"qkv must be [B', 3, H, D] with B' >= B = {batch}, H = {heads}, D = "
                     f"{head_dim} (the cache's), got {qkv.shape}")
  if cache_positions.shape != cache_k.shape[:2] or positions.shape != (batch, 1):
    raise ValueError(f"cache_positions must be [B, L] = {cache_k.shape[:2]} and positions "
                     f"[B, 1], got {cache_positions.shape} and {positions.shape}")
  if rope_inv_freq.shape != (head_dim // 2,):
    raise ValueError(f"rope_inv_freq must be [D / 2] = [{head_dim // 2}], got "
                     f"{rope_inv_freq.shape}")
  if (q_norm_scale is None) != (k_norm_scale is None):
    raise ValueError("q_norm_scale and k_norm_scale must be given together (or neither)")
  scale, config, interpret = _checked_settings(qkv, (qkv, cache_k), window, scale, config,
                                              interpret)
  return _append_and_attend(qkv, cache_k, cache_v, cache_positions, positions,
                            rope_inv_freq, q_norm_scale, k_norm_scale, window=window,
                            scale=scale, eps=float(norm_eps), config=config,
                            interpret=interpret)


__all__ = ["KernelConfig", "append_and_attend", "check_config", "kernel_limits",
           "single_query_attention", "split_span"]
