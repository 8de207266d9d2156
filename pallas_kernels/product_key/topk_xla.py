"""Product-key top-k in XLA: the twin of `topk_pallas`.

Slot `i1 * S + i2` scores `s1[i1] + s2[i2]`. The k best slots are those of the k largest
exact sums, the lowest slot id first among equal ones; logits are the sums rounded to
float32. Comparing exact sums rather than their roundings matters only where two different
sums round to one float32 (a rounding tie): the larger exact sum then comes first. Each
sum is compared as (float32 sum, TwoSum residual) (`sum_residual`), which orders exactly
as the exact sums do, and only then by id. An infinite score counts as a huge finite one
(-inf + 3 above -inf + 2), so the order along a half's ranks stays monotone everywhere.

Rank each half (best first, the lower index first among equal scores). Pair (i, j) of
ranks is beaten by every pair of lower or equal ranks in both halves, (i + 1)(j + 1) - 1 of
them, each with an exact sum at least as large and, among equal sums, a lower slot id. So
the k best of the S^2 sums are among the pairs with (i + 1)(j + 1) <= k
(`candidate_pairs`: 119 for k = 32, 280 for k = 64), and the S^2 sums, or even the k x k
grid, are never formed. (On rounded sums alone the argument fails under rounding ties:
before session 41 this twin compared those and could differ from a brute-force top-k,
WORKSPACE.md, issue 12.)

Each half is ranked by `lax.top_k` (the lower index first among equal scores); the
candidates, which are not in id order, by a `lax.sort` keyed on (-sum, -residual, id),
which states the order outright. On the H200 this is 1.1-1.6x faster than sorting the
halves too (WORKSPACE.md).
"""

from __future__ import annotations

import jax
from jax import lax
import jax.numpy as jnp
import numpy as np


def candidate_pairs(k: int, per_half: int) -> np.ndarray:
  """[P, 2] ranks (i, j), both < per_half, with (i + 1)(j + 1) <= k; row-major order."""
  return np.array([(i, j) for i in range(per_half) for j in range(per_half)
                   if (i + 1) * (j + 1) <= k], np.int32)


def _without_negative_zero(x: jax.Array) -> jax.Array:
  """-0.0 -> +0.0: sorts order -0 below +0, the contract (and the kernel) treats them as
  equal sums. (-0) + (+0) = +0; the gradient stays 1, zeros included."""
  return x + lax.stop_gradient(jnp.where(x == 0, -x, jnp.zeros_like(x)))


def sum_residual(a: jax.Array, b: jax.Array, total: jax.Array) -> jax.Array:
  """a + b - total exactly, where total is a + b rounded to float32 (Knuth's TwoSum: six
  float32 operations, exact under round-to-nearest): (total, residual) orders as the exact
  sums do. Where total is infinite, an infinite score counts as a huge finite number: the
  residual is the other, finite score (so -inf + 3 ranks above -inf + 2), or total itself
  where both are infinite (-inf + -inf below every -inf + x). Sums must not overflow (an
  overflow gets 0) and must not be NaN. Any float arrays, in a kernel too."""
  b_virtual = total - a
  residual = (a - (total - b_virtual)) + (b - b_virtual)
  a_finite, b_finite = jnp.abs(a) < jnp.inf, jnp.abs(b) < jnp.inf
  residual = jnp.where(jnp.abs(total) < jnp.inf, residual,
                       jnp.where(a_finite, jnp.where(b_finite, 0.0, a),
                                 jnp.where(b_finite, b, total)))
  # +0.0 for -0.0: sorts order -0.0 below +0.0.
  return jnp.where(residual != 0, residual, 0.0)


def _best(sums: jax.Array, residuals: jax.Array, ids: jax.Array, count: int):
  """The `count` best of `sums` [..., X] with their `ids`: the largest exact sums (sum,
  then residual), lowest id first among equal ones. Differentiable in `sums` (sort
  carries them as an operand)."""
  _, _, ids, sums = lax.sort((-sums, -residuals, ids, sums), num_keys=3)
  return sums[..., :count], ids[..., :count]


def _ranked_half(half: jax.Array, count: int):
  """The `count` best of `half` [..., S] and their indices, best first (`lax.top_k`: the
  lower index first among equal values)."""
  values, idx = lax.top_k(half, count)
  return values, idx.astype(jnp.int32)


def product_key_topk(scores: jax.Array, k: int) -> tuple[jax.Array, jax.Array]:
  """scores [..., 2S] -> (idx [..., k] int32, logits [..., k] in scores' dtype).

  The k largest exact sums (module docstring), rounded to float32 (at least) as logits;
  among equal sums the lowest slot id wins. Gradients flow to the selected score entries.
  """
  num_sub_keys = scores.shape[-1] // 2
  wide = _without_negative_zero(scores.astype(jnp.promote_types(scores.dtype, jnp.float32)))
  per_half = min(k, num_sub_keys)
  # Both halves in one top-k (one launch instead of two: decoding is launch-bound).
  best, idx = _ranked_half(wide.reshape(*wide.shape[:-1], 2, num_sub_keys), per_half)
  (best1, best2), (idx1, idx2) = jnp.moveaxis(best, -2, 0), jnp.moveaxis(idx, -2, 0)
  first, second = candidate_pairs(k, per_half).T
  sums = _without_negative_zero(best1[..., first] + best2[..., second])
  residuals = lax.stop_gradient(sum_residual(best1[..., first], best2[..., second], sums))
  logits, idx = _best(sums, residuals, idx1[..., first] * num_sub_keys + idx2[..., second], k)
  return idx, logits.astype(scores.dtype)


def scores_cotangent(idx: jax.Array, d_logits: jax.Array, width: int, dtype) -> jax.Array:
  """The scores' cotangent [..., 2S] of logits = s1[idx // S] + s2[idx % S]: d_logits
  [..., k] added (in float32) to both half-scores of each selected slot. The backward of
  the Pallas kernels (GPU and TPU), whose selection is not differentiable by JAX."""
  sub_keys = width // 2
  rows = idx.reshape(-1, idx.shape[-1])
  d = d_logits.reshape(rows.shape).astype(jnp.float32)
  row_ids = jnp.arange(rows.shape[0])[:, None]
  # Both halves in one scatter: two passes over [rows, 2S] cost XLA's build of `sdm_small`'s
  # layer 134 MB more per call (WORKSPACE.md, issue 11, session 44).
  cols = jnp.concatenate([rows // sub_keys, sub_keys + rows % sub_keys], axis=-1)
  d_scores = jnp.zeros((rows.shape[0], width), jnp.float32).at[row_ids, cols].add(
      jnp.concatenate([d, d], axis=-1))
  return d_scores.reshape(*idx.shape[:-1], width).astype(dtype)
