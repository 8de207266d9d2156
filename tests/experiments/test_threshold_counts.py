"""The early-stopping bit counts that `experiments.threshold_counts` replays: the cut
chooses exactly the k best keys, and every bit is counted only where the k-th key ties."""

from __future__ import annotations

import numpy as np

from experiments import threshold_counts


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
