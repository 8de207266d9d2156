"""Product-key top-k in XLA: the twin of `topk_pallas`.

Slot `i1 * S + i2` scores `s1[i1] + s2[i2]`. The k best of the S^2 sums are among the
k' x k' sums of the k' = min(k, S) best of each half: a pair whose first entry is not in
the k best of `s1` is beaten by k pairs that share its second entry (ties included: with
equal scores, the lower index, hence the lower slot id, ranks first). So the S^2 sums are
never formed.
"""

from __future__ import annotations

import jax
from jax import lax
import jax.numpy as jnp


def _without_negative_zero(x: jax.Array) -> jax.Array:
  """-0.0 -> +0.0: `lax.top_k` orders -0 below +0, the contract (and the kernel) treats
  them as equal sums. (-0) + (+0) = +0; the gradient stays 1, zeros included."""
  return x + lax.stop_gradient(jnp.where(x == 0, -x, jnp.zeros_like(x)))


def _best_in_id_order(half: jax.Array, count: int):
  """The `count` best entries of `half` [..., S] (ties: lowest index), sorted by index."""
  values, idx = lax.top_k(half, count)
  idx, values = lax.sort((idx.astype(jnp.int32), values), num_keys=1)
  return values, idx


def product_key_topk(scores: jax.Array, k: int) -> tuple[jax.Array, jax.Array]:
  """scores [..., 2S] -> (idx [..., k] int32, logits [..., k] in scores' dtype).

  Sums are formed in float32 (at least); among equal sums the lowest slot id wins.
  Gradients flow to the selected score entries (through `lax.top_k`).
  """
  num_sub_keys = scores.shape[-1] // 2
  wide = _without_negative_zero(scores.astype(jnp.promote_types(scores.dtype, jnp.float32)))
  per_half = min(k, num_sub_keys)
  best1, idx1 = _best_in_id_order(wide[..., :num_sub_keys], per_half)
  best2, idx2 = _best_in_id_order(wide[..., num_sub_keys:], per_half)
  # Both halves sorted by index: the pair grid, row-major, is in slot-id order, so
  # lax.top_k's tie rule (lower position first) is the lowest-id rule.
  pair_scores = _without_negative_zero(best1[..., :, None] + best2[..., None, :])
  pair_scores = pair_scores.reshape(*pair_scores.shape[:-2], per_half * per_half)
  logits, flat = lax.top_k(pair_scores, k)
  first = jnp.take_along_axis(idx1, flat // per_half, axis=-1)
  second = jnp.take_along_axis(idx2, flat % per_half, axis=-1)
  return first * num_sub_keys + second, logits.astype(scores.dtype)
