"""Product-key top-k: the k best of S x S slots scored as sums of two halves (DESIGN.md 3.2).

Slot `i1 * S + i2` scores `s1[i1] + s2[i2]` where `s1, s2` are the halves of a score
vector of size 2S. The k best of the S^2 sums are among the k' x k' sums of the k' = min(k, S)
best of each half: a pair whose first entry is not in the k best of `s1` is beaten by k
pairs that share its second entry. So the S^2 sums are never formed.
"""

from __future__ import annotations

import jax
from jax import lax
import jax.numpy as jnp


def product_key_topk(scores: jax.Array, k: int) -> tuple[jax.Array, jax.Array]:
  """The k best slots of a product-key score vector.

  Args:
    scores: [..., 2S] float; the first S entries score the first sub-key, the last S the
      second.
    k: how many slots to select, 1 <= k <= S * S.

  Returns:
    idx: [..., k] int32 slot ids `i1 * S + i2` in [0, S * S), distinct along the last axis.
    logits: [..., k] the sums `s1[i1] + s2[i2]`, in descending order; gradients flow to
      the selected score entries only (ids are discrete).
  """
  if scores.ndim < 1:
    raise ValueError(f"scores must have a last axis of size 2S, got shape {scores.shape}")
  two_s = scores.shape[-1]
  if two_s % 2 or two_s == 0:
    raise ValueError(
        f"scores' last dim must be 2S (even and > 0: two sub-key halves), got {two_s}")
  num_sub_keys = two_s // 2
  if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= num_sub_keys**2:
    raise ValueError(
        f"k must be an int in [1, S*S] = [1, {num_sub_keys**2}] (S = {num_sub_keys}), "
        f"got {k!r}")
  if not jnp.issubdtype(scores.dtype, jnp.floating):
    raise ValueError(f"scores must be floating point, got dtype {scores.dtype}")

  per_half = min(k, num_sub_keys)
  best1, idx1 = lax.top_k(scores[..., :num_sub_keys], per_half)
  best2, idx2 = lax.top_k(scores[..., num_sub_keys:], per_half)
  pair_scores = best1[..., :, None] + best2[..., None, :]
  pair_scores = pair_scores.reshape(*pair_scores.shape[:-2], per_half * per_half)
  logits, flat = lax.top_k(pair_scores, k)
  first = jnp.take_along_axis(idx1, flat // per_half, axis=-1)
  second = jnp.take_along_axis(idx2, flat % per_half, axis=-1)
  idx = first.astype(jnp.int32) * num_sub_keys + second.astype(jnp.int32)
  return idx, logits
