"""Single-query attention over a decode cache in XLA: the twin of `decode_pallas`.

Window convention: a window of `w` keys lets the query at position p see keys at
positions p - w + 1 .. p (itself and the w - 1 before it). Cache slots hold the position
of the token stored there, negative for an empty slot.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp


def visible(q_pos: jax.Array, k_pos: jax.Array, window: int | None) -> jax.Array:
  """Elementwise (broadcasting) whether the key at k_pos is visible to the query at q_pos:
  `0 <= k_pos <= q_pos` and, with a window, `q_pos - k_pos < window`. Negative key
  positions mark empty cache slots. The rule of both decode paths (the kernel applies it to
  each block of slots)."""
  seen = (k_pos >= 0) & (k_pos <= q_pos)
  if window is not None:
    seen &= (q_pos - k_pos) < window
  return seen


def attention_mask(q_positions: jax.Array, k_positions: jax.Array,
                   window: int | None) -> jax.Array:
  """[B, Tq, Tk] boolean: key k is visible to query q (`visible`)."""
  return visible(q_positions[:, :, None], k_positions[:, None, :], window)


def single_query_attention(q: jax.Array, k: jax.Array, v: jax.Array, q_positions: jax.Array,
                           k_positions: jax.Array, *, window: int | None = None,
                           scale: float | None = None) -> jax.Array:
  """Softmax attention of one query per sequence (a decode step), reading k and v once.

  `o[b, h] = softmax_l(scale * q[b, h] . k[b, l, h] | visible) @ v[b, :, h]`; a query
  that sees no key gets zeros.

  q [B, 1, H, D]; k, v [B, L, H, D] (a cache); q_positions [B, 1]; k_positions [B, L]
  (negative = empty slot). Written as multiply-and-reduce over the cache's own layout:
  XLA's dot would first transpose the whole cache to put (b, h) in front, copying it twice
  per step. Returns [B, 1, H, D] in q.dtype; products and sums in float32.
  """
  chex.assert_rank([q, k, v], 4)
  chex.assert_equal_shape([k, v])
  if q.shape[1] != 1:
    raise ValueError(f"q must hold one query per sequence ([B, 1, H, D]), got {q.shape}")
  scale = q.shape[-1] ** -0.5 if scale is None else scale
  f32 = jnp.float32
  scores = jnp.sum(q.astype(f32) * k.astype(f32), axis=-1) * scale  # [B, L, H]
  mask = attention_mask(q_positions, k_positions, window)[:, 0, :, None]  # [B, L, 1]
  scores = jnp.where(mask, scores, -jnp.inf)
  weights = jnp.nan_to_num(jax.nn.softmax(scores, axis=1))
  out = jnp.sum(weights[..., None] * v.astype(f32), axis=1, keepdims=True)  # [B, 1, H, D]
  return out.astype(q.dtype)
