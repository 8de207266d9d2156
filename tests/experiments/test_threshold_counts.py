"""The early-stopping bit counts that `experiments.threshold_counts` replays: the cut
chooses exactly the k best keys, and every bit is counted only where the k-th key ties."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from experiments import threshold_counts
from pallas_kernels.product_key import topk_pallas


def test_the_cut_chooses_exactly_the_k_best_and_stops_early():
  rng = np.random.default_rng(3)
  stopped_early = 0
  for _ in range(20):
    keys = rng.integers(-2**31, 2**31 - 1, 64, dtype=np.int64).astype(np.int32)
    counts, cut = threshold_counts.counts_to_cut(keys, 8)
    assert (keys >= cut).sum() == 8
    assert cut <= np.sort(keys)[-8]
    assert 1 <= counts <= threshold_counts.KEY_BITS
    stopped_early += counts < threshold_counts.KEY_BITS
  assert stopped_early == 20


def test_a_tie_at_the_kth_key_counts_every_bit():
  keys = np.array([9, 7, 7, 7, -3, -8], np.int32)
  counts, cut = threshold_counts.counts_to_cut(keys, 2)
  assert (counts, cut) == (threshold_counts.KEY_BITS, 7)


def test_row_counts_of_random_scores_are_within_the_key_bits():
  scores = np.random.default_rng(4).standard_normal((2, 64)).astype(np.float32)
  halves, final = threshold_counts.row_counts(scores, 16)
  assert 1 <= halves <= threshold_counts.KEY_BITS
  assert 1 <= final <= threshold_counts.KEY_BITS


def test_the_replay_stops_at_the_kernels_own_cut():
  """The replay against `topk_pallas._thresholds` (plain jnp, one row a call, so that no
  other row of a program keeps its counts going): the same cut key in every row, tied rows
  included."""
  rng = np.random.default_rng(5)
  values = rng.standard_normal((12, 64)).astype(np.float32)
  values[:3] = rng.integers(-3, 4, (3, 64)) * 0.5   # ties at the k-th key
  keys = np.asarray(topk_pallas.ordered_key(jnp.asarray(values)))
  ids = jnp.arange(64, dtype=jnp.int32)[None]
  for row in keys:
    (key_cut, _), = topk_pallas._thresholds(
        (topk_pallas._Entries((jnp.asarray(row[None]),), (ids,), id_bits=6),), 16)
    assert int(key_cut[0, 0]) == threshold_counts.counts_to_cut(row, 16)[1]
