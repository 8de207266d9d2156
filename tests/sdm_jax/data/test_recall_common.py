from __future__ import annotations

import numpy as np
import pytest

from sdm_jax.data import _recall_common as common


def _assert_distinct_rows(tuples: np.ndarray) -> None:
  for row in tuples:
    assert len({tuple(t) for t in row}) == row.shape[0]


@pytest.mark.parametrize("num_rows, count, length, low, high", [
    (200, 5, 3, 2, 9),      # Sparse: rejection sampling.
    (200, 40, 1, 1, 50),    # Crowded, small population: random keys.
    (50, 25, 2, 10, 15),    # Every tuple of the population, in some order.
    (3, 400, 2, 0, 257),    # Crowded, population > 2**16: numpy's per-row sampler.
])
def test_distinct_tuples_are_distinct_and_in_range_on_every_path(num_rows, count, length,
                                                                  low, high):
  rng = np.random.default_rng(0)
  tuples = common.sample_distinct_tuples(rng, num_rows, count, length, low, high)
  assert tuples.shape == (num_rows, count, length)
  assert tuples.min() >= low and tuples.max() < high
  _assert_distinct_rows(tuples)


@pytest.mark.parametrize("count", [2, 60])  # Rejection path, random-key path.
def test_distinct_tuples_are_uniform(count):
  rng = np.random.default_rng(1)
  tuples = common.sample_distinct_tuples(rng, 4000, count, 2, 0, 10)
  # Every position of a uniform ordered sample is uniform over the 100 tuples.
  for position in (0, count - 1):
    ids = tuples[:, position, 0] * 10 + tuples[:, position, 1]
    counts = np.bincount(ids, minlength=100)
    chi2 = ((counts - 40.0) ** 2 / 40.0).sum()
    assert chi2 < 160, chi2  # 99 degrees of freedom: p(chi2 > 160) ~ 1e-4.


def test_weighted_sampling_matches_successive_sampling():
  weights = np.array([4.0, 2.0, 1.0, 1.0])
  p = weights / weights.sum()
  draws = common.sample_without_replacement(np.random.default_rng(2), 40000, 4, 2,
                                            weights=weights)
  assert np.all(draws[:, 0] != draws[:, 1])
  # Ordered pair (i, j) has probability p_i * p_j / (1 - p_i).
  for i, j in ((0, 1), (1, 0), (2, 3), (3, 0)):
    expected = p[i] * p[j] / (1 - p[i])
    observed = np.mean((draws[:, 0] == i) & (draws[:, 1] == j))
    assert abs(observed - expected) < 0.01, (i, j, observed, expected)


def test_labelled_shifts_targets_and_masks_non_answers():
  sequences = np.array([[5, 6, 7, 8]])
  mask = np.array([[False, False, True, True]])
  out = common.labelled(sequences, mask)
  np.testing.assert_array_equal(out["inputs"], [[5, 6, 7]])
  np.testing.assert_array_equal(out["targets"], [[-100, 7, 8]])
  assert out["inputs"].dtype == np.int32 and out["targets"].dtype == np.int32


def test_checks_name_the_argument():
  for bad in (0, -1, 1.5, True, "3"):
    with pytest.raises(ValueError, match="count_of_things must be an int >= 1"):
      common.check_int("count_of_things", bad, low=1)
  with pytest.raises(ValueError, match=r"depth_like must be an int \[0, 4\]"):
    common.check_int("depth_like", 5, low=0, high=4)
  assert common.check_int("x", np.int64(3), low=1) == 3
  with pytest.raises(ValueError, match="flag must be True or False"):
    common.check_bool("flag", 1)
  with pytest.raises(ValueError, match="seed"):
    common.check_seed(-1)
