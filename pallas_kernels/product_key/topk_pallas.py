"""Product-key top-k as a Pallas kernel (Triton on GPU; KERNELS.md 4).

Neither Triton nor Mosaic lowers a sort or `top_k`, so the kernel selects by rounds of
max-and-mask, one row of scores per program:

1. per half, k' = min(k, S) rounds: the largest untaken score, the lowest index among
   equal ones, recorded and taken; the pick of round r goes straight to the candidates
   whose rank in this half is r (no gathers from registers);
2. the pair grid pruned to ranks (i + 1)(j + 1) <= k: pair (i, j) is beaten by every pair
   of lower or equal ranks in both halves, (i + 1)(j + 1) - 1 of them, so only those can be
   in the top k (119 pairs for k = 32, 280 for k = 64, instead of k'^2);
3. k rounds of max-and-mask over the candidates' sums, the lowest slot id among equal sums.

The pruned candidates are a compile-time list passed as a constant. The backward (a
`custom_vjp`) scatters d_logits to the two score entries of each selected slot.
Scores must not be NaN.
"""

from __future__ import annotations

import functools

import jax
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as pltriton
import jax.numpy as jnp
import numpy as np

from pallas_kernels import platform
from pallas_kernels.blocks import next_power_of_two
from pallas_kernels.product_key.topk_xla import candidate_pairs, scores_cotangent

_NO_ID = np.iinfo(np.int32).max


def _max_and_mask(values, ids, taken, rounds: int, targets):
  """`rounds` times: the largest untaken value (lowest id among equals), recorded and taken.

  values [X] float32, ids [X] int32 (distinct among untaken entries), taken [X] bool;
  targets [Y] int32 ranks. Returns (values [Y], ids [Y]): lane y holds the targets[y]-th
  pick (0 = best); lanes whose rank is never picked (negative or >= rounds) hold -inf and
  _NO_ID. Writing picks straight to their lanes avoids gathering from registers later.
  """
  def body(r, carry):
    taken, out_values, out_ids = carry
    best = jnp.max(jnp.where(taken, -jnp.inf, values))
    pick = jnp.min(jnp.where(jnp.logical_not(taken) & (values == best), ids, _NO_ID))
    taken = taken | (ids == pick)
    out_values = jnp.where(targets == r, best, out_values)
    out_ids = jnp.where(targets == r, pick, out_ids)
    return taken, out_values, out_ids

  init = (taken, jnp.full(targets.shape, -jnp.inf, jnp.float32),
          jnp.full(targets.shape, _NO_ID, jnp.int32))
  _, out_values, out_ids = jax.lax.fori_loop(0, rounds, body, init)
  return out_values, out_ids


def _kernel(scores_ref, pairs_ref, idx_ref, logits_ref, *, sub_keys: int, k: int,
            per_half: int):
  row = pl.program_id(0)
  half_block = next_power_of_two(sub_keys)
  out_block = next_power_of_two(k)
  lanes = jnp.arange(half_block, dtype=jnp.int32)
  padding = lanes >= sub_keys
  first_rank, second_rank = pairs_ref[:, 0], pairs_ref[:, 1]  # [P] each, -1 = padding

  def candidates_of_half(offset, ranks):
    """Each candidate's score and index in this half: the ranks[p]-th best."""
    scores = pltriton.load(scores_ref.at[row, offset + lanes], mask=jnp.logical_not(padding),
                           other=-jnp.inf)
    return _max_and_mask(scores.astype(jnp.float32), lanes, padding, per_half, ranks)

  first_value, first_idx = candidates_of_half(0, first_rank)
  second_value, second_idx = candidates_of_half(sub_keys, second_rank)
  out_lanes = jnp.arange(out_block, dtype=jnp.int32)
  logits, idx = _max_and_mask(first_value + second_value, first_idx * sub_keys + second_idx,
                              first_rank < 0, k, out_lanes)
  stored = out_lanes < k
  out_at = jnp.where(stored, out_lanes, k)  # masked lanes out of bounds (interpret mode)
  pltriton.store(idx_ref.at[row, out_at], idx, mask=stored)
  pltriton.store(logits_ref.at[row, out_at], logits.astype(logits_ref.dtype), mask=stored)


def _forward(scores, k: int, interpret: bool):
  lead, width = scores.shape[:-1], scores.shape[-1]
  sub_keys = width // 2
  per_half = min(k, sub_keys)
  rows = scores.reshape(-1, width)
  pairs = candidate_pairs(k, per_half)
  padded = np.full((next_power_of_two(len(pairs)), 2), -1, np.int32)
  padded[:len(pairs)] = pairs
  kernel = functools.partial(_kernel, sub_keys=sub_keys, k=k, per_half=per_half)
  idx, logits = pl.pallas_call(
      kernel,
      out_shape=[jax.ShapeDtypeStruct((rows.shape[0], k), jnp.int32),
                 jax.ShapeDtypeStruct((rows.shape[0], k), scores.dtype)],
      grid=(rows.shape[0],),
      interpret=interpret,
      compiler_params=pltriton.CompilerParams(num_warps=1, num_stages=1),
  )(rows, jnp.asarray(padded))
  return idx.reshape(*lead, k), logits.reshape(*lead, k)


@functools.partial(jax.custom_vjp, nondiff_argnums=(1, 2))
def _topk(scores, k: int, interpret: bool):
  return _forward(scores, k, interpret)


def _topk_fwd(scores, k, interpret):
  idx, logits = _forward(scores, k, interpret)
  # Residuals must be arrays: an empty [0, 2S] array remembers the scores' width and dtype.
  return (idx, logits), (idx, jnp.zeros((0, scores.shape[-1]), scores.dtype))


def _topk_bwd(k, interpret, residuals, cotangents):
  del k, interpret
  idx, marker = residuals
  return (scores_cotangent(idx, cotangents[1], marker.shape[1], marker.dtype),)


_topk.defvjp(_topk_fwd, _topk_bwd)


def product_key_topk(scores: jax.Array, k: int, *, interpret: bool | None = None
                     ) -> tuple[jax.Array, jax.Array]:
  """scores [..., 2S] -> (idx [..., k] int32, logits [..., k] in scores' dtype); the
  contract of `topk_xla.product_key_topk`. interpret: default unless on a GPU."""
  if interpret is None:
    interpret = not platform.on_gpu()
  return _topk(scores, k, interpret)
