"""Product-key top-k as a Pallas TPU (Mosaic) kernel; the contract of `topk_xla`.

Mosaic lowers no sort or `top_k`, so the kernel selects by rounds of max-and-mask
(KERNELS.md 4), on blocks of 8 rows (one sublane tile) x whole halves in lanes, every
round a lane reduction for all 8 rows at once:

1. per half, k' = min(k, S) rounds: the largest untaken score (the lowest index among
   equal ones), recorded in the lanes of the candidates whose rank in this half is the
   round's, then taken;
2. the candidates are the pairs of ranks (i + 1)(j + 1) <= k (`topk_xla.candidate_pairs`:
   only they can be among the k best sums), a constant [2, P] input of ranks;
3. k rounds of max-and-mask over the candidates' exact sums: the largest float32 sum, the
   largest residual among equal ones (`topk_xla.sum_residual`), the lowest slot id among
   equal exact sums.

The wrapper widens the scores to float32 and pads: rows to a multiple of 8, each half and
the candidates to multiples of 128 lanes (padding lanes start taken). The backward (a
`custom_vjp`) is the vector-Jacobian product of gathering the two selected half-scores of
each slot (`topk_xla.scores_cotangent`, shared with the GPU kernel). Scores must not be NaN. Never compiled on a TPU here (none was available): tested
in TPU interpret mode and by lowering it for TPU on a CPU (README.md).
"""

from __future__ import annotations

import functools

import jax
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
import jax.numpy as jnp
import numpy as np

from pallas_kernels import platform
from pallas_kernels.product_key.topk_xla import candidate_pairs, scores_cotangent, sum_residual

LANES = 128
ROWS_PER_BLOCK = 8
_NO_ID = np.iinfo(np.int32).max


def _round_up(n: int, multiple: int) -> int:
  return -(-n // multiple) * multiple


def _select(values, ids, taken, rounds: int, ranks, residuals=None):
  """`rounds` rounds of max-and-mask over each row of values [8, X] (ids [8, X] distinct
  among untaken lanes, taken [8, X] bool; residuals [8, X]: among equal values the largest
  first, before the lowest id). Returns [8, Y] values and ids: lane y holds the ranks[y]-th
  pick of its row (0 = best); ranks [1, Y], lanes of no round get -inf, _NO_ID."""
  shape = (values.shape[0], ranks.shape[1])

  def round_(r, carry):
    taken, picked_values, picked_ids = carry
    best = jnp.max(jnp.where(taken, -jnp.inf, values), axis=1, keepdims=True)
    tied = jnp.logical_not(taken) & (values == best)
    if residuals is not None:
      top = jnp.max(jnp.where(tied, residuals, -jnp.inf), axis=1, keepdims=True)
      tied = tied & (residuals == top)
    pick = jnp.min(jnp.where(tied, ids, _NO_ID), axis=1, keepdims=True)
    taken = taken | (ids == pick)
    picked_values = jnp.where(ranks == r, best, picked_values)
    picked_ids = jnp.where(ranks == r, pick, picked_ids)
    return taken, picked_values, picked_ids

  init = (taken, jnp.full(shape, -jnp.inf, jnp.float32), jnp.full(shape, _NO_ID, jnp.int32))
  _, picked_values, picked_ids = lax.fori_loop(0, rounds, round_, init)
  return picked_values, picked_ids


def _kernel(first_ref, second_ref, ranks_ref, idx_ref, logits_ref, *, sub_keys: int, k: int,
            per_half: int):
  """first/second [8, S'] float32 halves (lanes >= S are padding), ranks [2, P'] int32
  (-1 = padding) -> idx, logits [8, k]."""
  half_lanes = lax.broadcasted_iota(jnp.int32, first_ref.shape, 1)
  padding = half_lanes >= sub_keys
  first_rank, second_rank = ranks_ref[0:1, :], ranks_ref[1:2, :]  # [1, P'] each
  first_value, first_idx = _select(first_ref[...], half_lanes, padding, per_half, first_rank)
  second_value, second_idx = _select(second_ref[...], half_lanes, padding, per_half,
                                     second_rank)
  not_candidate = jnp.broadcast_to(first_rank < 0, first_value.shape)
  slot = jnp.where(not_candidate, _NO_ID, first_idx * sub_keys + second_idx)
  out_lanes = lax.broadcasted_iota(jnp.int32, (1, _round_up(k, LANES)), 1)
  sums = first_value + second_value
  logits, idx = _select(sums, slot, not_candidate, k, out_lanes,
                        sum_residual(first_value, second_value, sums))
  idx_ref[...] = idx[:, :k]
  logits_ref[...] = logits[:, :k]


def _forward(scores, k: int, interpret):
  """scores [..., 2S] -> idx [..., k] int32, logits [..., k] float32."""
  lead, width = scores.shape[:-1], scores.shape[-1]
  sub_keys = width // 2
  per_half = min(k, sub_keys)
  rows = scores.reshape(-1, width).astype(jnp.float32)
  num_rows = rows.shape[0]
  padded_rows = _round_up(max(num_rows, 1), ROWS_PER_BLOCK)
  half_lanes = _round_up(sub_keys, LANES)

  def half(x):
    return jnp.pad(x, ((0, padded_rows - num_rows), (0, half_lanes - sub_keys)),
                   constant_values=-jnp.inf)

  pairs = candidate_pairs(k, per_half)
  ranks = np.full((2, _round_up(len(pairs), LANES)), -1, np.int32)
  ranks[:, :len(pairs)] = pairs.T
  row_block = lambda lanes: pl.BlockSpec((ROWS_PER_BLOCK, lanes), lambda i: (i, 0))  # noqa: E731
  kernel = functools.partial(_kernel, sub_keys=sub_keys, k=k, per_half=per_half)
  idx, logits = pl.pallas_call(
      kernel,
      grid=(padded_rows // ROWS_PER_BLOCK,),
      in_specs=[row_block(half_lanes), row_block(half_lanes),
                pl.BlockSpec(ranks.shape, lambda i: (0, 0))],
      out_specs=[row_block(k), row_block(k)],
      out_shape=[jax.ShapeDtypeStruct((padded_rows, k), jnp.int32),
                 jax.ShapeDtypeStruct((padded_rows, k), jnp.float32)],
      compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
      interpret=interpret,
  )(half(rows[:, :sub_keys]), half(rows[:, sub_keys:]), jnp.asarray(ranks))
  return idx[:num_rows].reshape(*lead, k), logits[:num_rows].reshape(*lead, k)


@functools.partial(jax.custom_vjp, nondiff_argnums=(1, 2))
def _topk(scores, k: int, interpret):
  idx, logits = _forward(scores, k, interpret)
  return idx, logits.astype(scores.dtype)


def _topk_fwd(scores, k, interpret):
  idx, logits = _topk(scores, k, interpret)
  # Residuals must be arrays: an empty [0, 2S] array remembers the scores' width and dtype.
  return (idx, logits), (idx, jnp.zeros((0, scores.shape[-1]), scores.dtype))


def _topk_bwd(k, interpret, residuals, cotangents):
  del k, interpret
  idx, marker = residuals
  return (scores_cotangent(idx, cotangents[1], marker.shape[1], marker.dtype),)


_topk.defvjp(_topk_fwd, _topk_bwd)


def product_key_topk(scores: jax.Array, k: int, *,
                     interpret: bool | pltpu.InterpretParams | None = None
                     ) -> tuple[jax.Array, jax.Array]:
  """scores [..., 2S] -> (idx [..., k] int32, logits [..., k] in scores' dtype); the
  contract of `topk_xla.product_key_topk`. interpret: False compiles for TPU, True or
  `pltpu.InterpretParams(...)` runs TPU interpret mode; default: compiled on a TPU,
  interpret mode elsewhere."""
  if interpret is None:
    interpret = platform.tpu_interpret()
  return _topk(scores, k, interpret)


__all__ = ["product_key_topk"]
