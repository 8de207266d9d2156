from __future__ import annotations

import numpy as np
import pytest

from sdm_jax.data import needle
from sdm_jax.data.needle import EQUALS_ID, QUERY_ID
from sdm_jax.data.recall_tasks import IGNORE_LABEL, RECALL_TASKS

IGNORE = -100
VOCAB = 40  # Keys [2, 21), values [21, 40).


def _full_sequence(inputs: np.ndarray, targets: np.ndarray) -> np.ndarray:
  # Every sequence ends with an answer token, which only the last target holds.
  assert targets[-1] != IGNORE
  return np.append(inputs, targets[-1])


def _parse_needles(haystack: np.ndarray, key_len: int, value_len: int) -> dict:
  """Brute force: key tuple -> its values, in haystack order, read around each "="."""
  found: dict[tuple, list] = {}
  for e in np.flatnonzero(haystack == EQUALS_ID):
    key = tuple(haystack[e - key_len:e].tolist())
    found.setdefault(key, []).extend(haystack[e + 1:e + 1 + value_len].tolist())
  return found


def _check_retrieval(out, *, num_keys, num_values, num_queries, key_len, value_len):
  """Solves every example from its inputs alone and checks the labels against it."""
  (key_low, key_high), (value_low, value_high) = needle.needle_token_ranges(VOCAB)
  query_len = 2 + key_len + num_values * value_len
  for inputs, targets in zip(out["inputs"], out["targets"]):
    sequence = _full_sequence(inputs, targets)
    start = len(sequence) - num_queries * query_len
    haystack, queries = sequence[:start], sequence[start:].reshape(num_queries, query_len)
    assert QUERY_ID not in haystack
    assert np.sum(haystack == EQUALS_ID) == num_keys * num_values
    needles = _parse_needles(haystack, key_len, value_len)
    assert len(needles) == num_keys
    for key, values in needles.items():
      assert all(key_low <= t < key_high for t in key)
      assert all(value_low <= t < value_high for t in values)
    all_values = [tuple(v[i:i + value_len]) for v in needles.values()
                  for i in range(0, len(v), value_len)]
    assert len(set(all_values)) == num_keys * num_values
    expected_targets = np.full(len(inputs), IGNORE)
    queried = []
    for q, query in enumerate(queries):
      assert query[0] == QUERY_ID and query[1 + key_len] == EQUALS_ID
      key = tuple(query[1:1 + key_len].tolist())
      queried.append(key)
      answer_start = start + q * query_len + 2 + key_len
      answer = needles[key]  # The brute-force solver's prediction.
      expected_targets[answer_start - 1:answer_start - 1 + len(answer)] = answer
    assert len(set(queried)) == num_queries
    np.testing.assert_array_equal(targets, expected_targets)


def _retrieval(variant, num_examples=30, **overrides):
  kwargs = dict(seq_len=120, vocab_size=VOCAB, seed=0) | overrides
  return needle.NEEDLE_TASKS[variant](num_examples, **kwargs)


@pytest.mark.parametrize("variant, sizes", [
    ("single", dict(num_keys=1, num_values=1, num_queries=1)),
    ("multi_key", dict(num_keys=4, num_values=1, num_queries=1)),
    ("multi_value", dict(num_keys=1, num_values=4, num_queries=1)),
    ("multi_query", dict(num_keys=4, num_values=1, num_queries=4)),
])
@pytest.mark.parametrize("key_len, value_len", [(1, 1), (3, 2)])
@pytest.mark.parametrize("filler", ["random", "repeat"])
@pytest.mark.parametrize("depth", [None, 0.0, 0.6, 1.0])
def test_every_variant_is_solved_by_brute_force(variant, sizes, key_len, value_len, filler,
                                                depth):
  out = _retrieval(variant, key_len=key_len, value_len=value_len, filler=filler,
                   depth=depth)
  for array in out.values():
    assert array.shape == (30, 120) and array.dtype == np.int32
  _check_retrieval(out, key_len=key_len, value_len=value_len, **sizes)


def test_general_form_mixes_keys_values_and_queries():
  sizes = dict(num_keys=5, num_values=3, num_queries=2)
  out = needle.needle_in_haystack(20, seq_len=200, vocab_size=VOCAB, key_len=2,
                                  value_len=2, seed=1, **sizes)
  _check_retrieval(out, key_len=2, value_len=2, **sizes)


def test_multi_query_with_fewer_queries_than_keys():
  out = _retrieval("multi_query", num_keys=6, num_queries=2)
  _check_retrieval(out, num_keys=6, num_values=1, num_queries=2, key_len=1, value_len=1)


def _needle_spans(haystack: np.ndarray, key_len: int, value_len: int) -> np.ndarray:
  in_needle = np.zeros(len(haystack), dtype=bool)
  for e in np.flatnonzero(haystack == EQUALS_ID):
    in_needle[e - key_len:e + 1 + value_len] = True
  return in_needle


@pytest.mark.parametrize("depth", [0.0, 0.25, 0.5, 1.0])
def test_depth_places_the_queried_needle_after_that_fraction_of_filler(depth):
  key_len = value_len = 2
  out = _retrieval("multi_key", num_keys=3, key_len=key_len, value_len=value_len,
                   depth=depth, seq_len=100)
  needle_len, query_len = 5, 6
  num_filler = 101 - 3 * needle_len - query_len
  for inputs, targets in zip(out["inputs"], out["targets"]):
    sequence = _full_sequence(inputs, targets)
    haystack, query = sequence[:-query_len], sequence[-query_len:]
    in_needle = _needle_spans(haystack, key_len, value_len)
    assert np.sum(~in_needle) == num_filler
    key = query[1:3].tolist()
    start = next(e - key_len for e in np.flatnonzero(haystack == EQUALS_ID)
                 if haystack[e - key_len:e].tolist() == key)
    assert np.sum(~in_needle[:start]) == round(depth * num_filler)


def test_random_depth_covers_the_whole_haystack():
  out = _retrieval("single", num_examples=400, seq_len=100)
  starts = np.argmax(out["inputs"] == EQUALS_ID, axis=1) - 1
  # 101 - 3 (needle) - 4 (query) = 94 filler tokens: the needle starts at 0..94.
  assert starts.min() <= 1 and starts.max() >= 93
  assert 40 < starts.mean() < 54


def test_filler_modes():
  (key_low, _), (_, value_high) = needle.needle_token_ranges(VOCAB)
  random_out = _retrieval("multi_key", num_examples=100, filler="random")
  filler = []
  for inputs, targets in zip(random_out["inputs"], random_out["targets"]):
    haystack = _full_sequence(inputs, targets)[:-4]
    filler.append(haystack[~_needle_spans(haystack, 1, 1)])
  assert set(np.unique(np.concatenate(filler))) == set(range(key_low, value_high))

  repeat_out = _retrieval("multi_key", num_examples=10, filler="repeat")
  pattern = needle.noise_pattern(VOCAB)
  assert pattern.shape == (needle.NOISE_PERIOD,)
  assert pattern.min() >= key_low and pattern.max() < value_high
  for inputs, targets in zip(repeat_out["inputs"], repeat_out["targets"]):
    haystack = _full_sequence(inputs, targets)[:-4]
    filler = haystack[~_needle_spans(haystack, 1, 1)]
    np.testing.assert_array_equal(filler, np.resize(pattern, filler.shape))
  # The noise pattern is the same for every seed.
  other_seed = _retrieval("multi_key", num_examples=10, filler="repeat", seed=5)
  np.testing.assert_array_equal(needle.noise_pattern(VOCAB), pattern)
  assert not np.array_equal(other_seed["inputs"], repeat_out["inputs"])


def test_token_ranges_split_the_vocabulary_after_the_reserved_ids():
  assert needle.needle_token_ranges(40) == ((2, 21), (21, 40))
  assert needle.needle_token_ranges(5) == ((2, 3), (3, 5))


def _solve_variable_tracking(sequence: np.ndarray, name_len: int, value_len: int):
  """Brute force: parse every assignment, then follow the queried name to a value.

  Returns (answer, hops, haystack) or raises if the inputs are ambiguous.
  """
  (name_low, _), (value_low, _) = needle.needle_token_ranges(VOCAB)
  query_len = 2 + name_len + value_len
  haystack, query = sequence[:-query_len], sequence[-query_len:]
  assignments, order = {}, {}
  for e in np.flatnonzero(haystack == EQUALS_ID):
    name = tuple(haystack[e - name_len:e].tolist())
    assert all(name_low <= t < value_low for t in name)
    assert name not in assignments  # Every variable is assigned once.
    if haystack[e + 1] >= value_low:
      assignments[name] = ("value", tuple(haystack[e + 1:e + 1 + value_len].tolist()))
    else:
      source = tuple(haystack[e + 1:e + 1 + name_len].tolist())
      assert source in order  # Assigned from a variable defined earlier.
      assignments[name] = ("name", source)
    order[name] = e
  assert query[0] == QUERY_ID and query[1 + name_len] == EQUALS_ID
  name, hops = tuple(query[1:1 + name_len].tolist()), 0
  while assignments[name][0] == "name":
    name, hops = assignments[name][1], hops + 1
  return list(assignments[name][1]), hops, assignments


@pytest.mark.parametrize("num_chains, num_hops", [(1, 4), (3, 2), (2, 0)])
@pytest.mark.parametrize("name_len, value_len", [(1, 1), (2, 3), (3, 1)])
@pytest.mark.parametrize("filler", ["random", "repeat"])
def test_variable_tracking_is_solved_by_brute_force(num_chains, num_hops, name_len,
                                                    value_len, filler):
  out = needle.variable_tracking(30, seq_len=150, vocab_size=VOCAB, num_chains=num_chains,
                                 num_hops=num_hops, name_len=name_len, value_len=value_len,
                                 filler=filler, seed=2)
  for array in out.values():
    assert array.shape == (30, 150) and array.dtype == np.int32
  for inputs, targets in zip(out["inputs"], out["targets"]):
    sequence = _full_sequence(inputs, targets)
    answer, hops, assignments = _solve_variable_tracking(sequence, name_len, value_len)
    assert hops == num_hops
    assert len(assignments) == num_chains * (num_hops + 1)
    chain_values = {v for kind, v in assignments.values() if kind == "value"}
    assert len(chain_values) == num_chains
    expected = np.full(150, IGNORE)
    expected[150 - value_len:] = answer
    np.testing.assert_array_equal(targets, expected)


@pytest.mark.parametrize("variant", sorted(needle.NEEDLE_TASKS))
def test_deterministic_per_seed_and_different_across_seeds(variant):
  make = needle.NEEDLE_TASKS[variant]
  first, again, other = (make(8, seq_len=80, vocab_size=VOCAB, seed=s) for s in (3, 3, 4))
  for name in ("inputs", "targets"):
    np.testing.assert_array_equal(first[name], again[name])
  assert not np.array_equal(first["inputs"], other["inputs"])
  assert not np.array_equal(first["targets"], other["targets"])


def test_minimal_sequence_has_no_filler():
  # Needle "k = v" (3) + query "? k = v" (4) = 7 tokens = seq_len + 1.
  out = needle.needle_single(5, seq_len=6, vocab_size=VOCAB, seed=0)
  sequence = np.concatenate([out["inputs"], out["targets"][:, -1:]], axis=1)
  np.testing.assert_array_equal(sequence[:, [1, 3, 5]], [[EQUALS_ID, QUERY_ID, EQUALS_ID]] * 5)
  np.testing.assert_array_equal(sequence[:, 0], sequence[:, 4])
  np.testing.assert_array_equal(sequence[:, 2], sequence[:, 6])


@pytest.mark.parametrize("overrides, message", [
    (dict(num_examples=0), "num_examples"),
    (dict(seq_len=0), "seq_len"),
    (dict(vocab_size=3), "vocab_size"),
    (dict(num_keys=0), "num_keys"),
    (dict(num_values=0), "num_values"),
    (dict(num_queries=0), "num_queries"),
    (dict(num_keys=2, num_queries=3), r"num_queries must be an int \[1, 2\]"),
    (dict(key_len=0), "key_len"),
    (dict(value_len=0), "value_len"),
    (dict(depth=-0.1), "depth"),
    (dict(depth=1.5), "depth"),
    (dict(depth=float("nan")), "depth"),
    (dict(depth=True), "depth"),
    (dict(depth="middle"), "depth"),
    (dict(filler="zeros"), "filler"),
    (dict(vocab_size=6, num_keys=3), "num_keys asks for 3 distinct keys"),
    (dict(vocab_size=6, num_keys=2, num_values=2), "num_values asks for 4 distinct values"),
    (dict(seq_len=14, num_keys=4), r"seq_len must be >= 15"),
    (dict(seed=-1), "seed"),
    (dict(seed="0"), "seed"),
])
def test_needle_invalid_arguments_raise_value_error_naming_them(overrides, message):
  kwargs = dict(num_examples=2, seq_len=60, vocab_size=VOCAB, seed=0) | overrides
  with pytest.raises(ValueError, match=message):
    needle.needle_in_haystack(kwargs.pop("num_examples"), **kwargs)


@pytest.mark.parametrize("overrides, message", [
    (dict(num_examples=0), "num_examples"),
    (dict(seq_len=0), "seq_len"),
    (dict(vocab_size=3), "vocab_size"),
    (dict(num_chains=0), "num_chains"),
    (dict(num_hops=-1), "num_hops"),
    (dict(name_len=0), "name_len"),
    (dict(value_len=0), "value_len"),
    (dict(filler="essay"), "filler"),
    (dict(vocab_size=6, num_chains=1, num_hops=2), "num_chains asks for 3 distinct variable"),
    (dict(vocab_size=8, num_chains=4, num_hops=0, name_len=2),
     "num_chains asks for 4 distinct chain values"),
    (dict(seq_len=40, num_chains=3, num_hops=4), r"seq_len must be >= 4[0-9]"),
    (dict(seed=-3), "seed"),
])
def test_variable_tracking_invalid_arguments_raise_value_error_naming_them(overrides,
                                                                          message):
  kwargs = dict(num_examples=2, seq_len=60, vocab_size=VOCAB, seed=0) | overrides
  with pytest.raises(ValueError, match=message):
    needle.variable_tracking(kwargs.pop("num_examples"), **kwargs)


def test_recall_registry_calls_every_generator_with_the_shared_arguments():
  assert set(RECALL_TASKS) == {"mqar", *needle.NEEDLE_TASKS}
  for name, make in RECALL_TASKS.items():
    extra = dict(num_kv_pairs=4) if name == "mqar" else {}
    out = make(3, seq_len=64, vocab_size=VOCAB, seed=0, **extra)
    assert out["inputs"].shape == out["targets"].shape == (3, 64)
    assert np.all((out["targets"] != IGNORE_LABEL).sum(axis=1) >= 1)
