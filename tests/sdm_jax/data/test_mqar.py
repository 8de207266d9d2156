from __future__ import annotations

import numpy as np
import pytest

from sdm_jax.data.mqar import mqar, recall_positions

IGNORE = -100


def _generate(num_examples=50, **overrides):
  kwargs = dict(seq_len=64, num_kv_pairs=8, vocab_size=100, seed=0) | overrides
  return mqar(num_examples, **kwargs)


def test_shapes_dtypes_and_vocabulary_halves():
  out = _generate()
  assert set(out) == {"inputs", "targets"}
  for array in out.values():
    assert array.shape == (50, 64) and array.dtype == np.int32
  keys, values = out["inputs"][:, 0:16:2], out["inputs"][:, 1:16:2]
  assert keys.min() >= 1 and keys.max() < 50
  assert values.min() >= 50 and values.max() < 100
  for row_keys, row_values in zip(keys, values):
    assert len(set(row_keys)) == 8 and len(set(row_values)) == 8
  assert out["inputs"].min() >= 0 and out["inputs"].max() < 100


@pytest.mark.parametrize("seq_len, num_kv_pairs, random_non_queries",
                         [(64, 8, True), (64, 8, False), (33, 8, True), (32, 8, False),
                          (200, 1, True)])
def test_every_key_is_queried_once_and_labelled_with_its_value(seq_len, num_kv_pairs,
                                                                random_non_queries):
  out = _generate(seq_len=seq_len, num_kv_pairs=num_kv_pairs,
                  random_non_queries=random_non_queries)
  context = 2 * num_kv_pairs
  for inputs, targets in zip(out["inputs"], out["targets"]):
    pairs = dict(zip(inputs[0:context:2].tolist(), inputs[1:context:2].tolist()))
    query_positions = np.flatnonzero(targets != IGNORE)
    # Labels only in query slots: even offsets after the pairs.
    assert query_positions.min() >= context
    assert np.all((query_positions - context) % 2 == 0)
    queried = inputs[query_positions].tolist()
    assert sorted(queried) == sorted(pairs)
    assert targets[query_positions].tolist() == [pairs[key] for key in queried]
    if not random_non_queries:
      filler = np.ones(seq_len, dtype=bool)
      filler[:context] = False
      filler[query_positions] = False
      assert np.all(inputs[filler] == 0)


def test_layout_of_the_docstring_example():
  out = mqar(200, seq_len=14, num_kv_pairs=2, vocab_size=12, random_non_queries=False,
             seed=3)
  inputs, targets = out["inputs"], out["targets"]
  # Queries only at even offsets 4, 6, ..., 12; zeros everywhere else after the pairs.
  assert np.all(inputs[:, 5::2] == 0)
  assert np.all(targets[:, :4] == IGNORE) and np.all(targets[:, 5::2] == IGNORE)
  assert np.all((targets != IGNORE).sum(axis=1) == 2)
  assert np.all(inputs[:, 0:4:2] < 6) and np.all(inputs[:, 1:4:2] >= 6)


def test_random_filler_spans_the_whole_vocabulary():
  out = _generate(num_examples=200, seq_len=128, random_non_queries=True)
  filler = out["inputs"][:, 16:][out["targets"][:, 16:] == IGNORE]
  assert set(np.unique(filler)) == set(range(100))


@pytest.mark.parametrize("power_a", [0.01, 0.5, 1.0])
def test_query_slots_follow_the_power_law(power_a):
  # With one pair the slot of its query is one draw from p(s) ~ s ** (power_a - 1).
  out = mqar(20000, seq_len=2 + 2 * 6, num_kv_pairs=1, vocab_size=10, power_a=power_a,
             seed=4)
  slots = (np.argmax(out["targets"] != IGNORE, axis=1) - 2) // 2
  observed = np.bincount(slots, minlength=6) / slots.size
  expected = np.arange(1, 7) ** (power_a - 1.0)
  expected /= expected.sum()
  np.testing.assert_allclose(observed, expected, atol=0.015)


def test_default_power_law_puts_queries_near_the_pairs():
  out = _generate(num_examples=500, seq_len=512, num_kv_pairs=4)
  positions = np.flatnonzero(out["targets"].ravel() != IGNORE) % 512
  # p(s) ~ 1/s over 252 slots: about half the queries fall in the first 16 slots.
  assert np.mean(positions < 8 + 2 * 16) > 0.4
  assert positions.max() > 256


def test_deterministic_per_seed_and_different_across_seeds():
  first, again, other = _generate(seed=7), _generate(seed=7), _generate(seed=8)
  for name in ("inputs", "targets"):
    np.testing.assert_array_equal(first[name], again[name])
  assert not np.array_equal(first["inputs"], other["inputs"])
  assert not np.array_equal(first["targets"], other["targets"])


@pytest.mark.parametrize("overrides, message", [
    (dict(num_examples=0), "num_examples"),
    (dict(num_examples=True), "num_examples"),
    (dict(num_kv_pairs=0), "num_kv_pairs"),
    (dict(vocab_size=3), "vocab_size"),
    (dict(num_kv_pairs=50, seq_len=200),
     r"num_kv_pairs must be in \[1, vocab_size // 2 - 1 = 49\]"),
    (dict(seq_len=0), "seq_len"),
    (dict(seq_len=31), r"seq_len must be >= 4 \* num_kv_pairs = 32"),
    (dict(power_a=0.0), "power_a"),
    (dict(power_a=-1.0), "power_a"),
    (dict(power_a=float("nan")), "power_a"),
    (dict(power_a=float("inf")), "power_a"),
    (dict(power_a="0.01"), "power_a"),
    (dict(random_non_queries=1), "random_non_queries"),
    (dict(seed=-1), "seed"),
    (dict(seed=1.5), "seed"),
])
def test_invalid_arguments_raise_value_error_naming_them(overrides, message):
  with pytest.raises(ValueError, match=message):
    _generate(**overrides)


def test_recall_positions_pair_each_query_with_its_keys_value():
  data = mqar(6, seq_len=40, num_kv_pairs=5, vocab_size=32, seed=3)
  queries, values = recall_positions(data["inputs"], data["targets"], 5)
  assert queries.shape == values.shape == (6, 5) and queries.dtype == np.int32
  rows = np.arange(6)[:, None]
  assert (np.diff(queries, axis=1) > 0).all()
  assert (data["inputs"][rows, values] == data["targets"][rows, queries]).all()
  assert (data["inputs"][rows, values - 1] == data["inputs"][rows, queries]).all()
  with pytest.raises(ValueError, match="labelled positions"):
    recall_positions(data["inputs"], data["targets"], 4)
  with pytest.raises(ValueError, match="of one shape"):
    recall_positions(data["inputs"][:, :-1], data["targets"], 5)
