"""Task specs of `sdm_jax.data.recall_tasks`: options read off the generators, validation,
and drawing examples."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from sdm_jax.data.recall_tasks import (IGNORE_LABEL, RECALL_TASKS, chance_accuracy,
                                       check_task, make_examples, task_options)


def test_options_are_the_generators_keywords():
  assert task_options("mqar") == {"num_kv_pairs": inspect.Parameter.empty, "power_a": 0.01,
                                  "random_non_queries": True}
  assert set(task_options("multi_query")) == {"num_keys", "num_queries", "key_len",
                                              "value_len", "depth", "filler"}
  for name in RECALL_TASKS:
    assert not {"num_examples", "seq_len", "vocab_size", "seed"} & set(task_options(name))


def test_make_examples_passes_options_and_is_a_function_of_the_seed():
  task = check_task({"name": "multi_key", "seq_len": 96, "vocab_size": 64, "num_keys": 6,
                     "key_len": 2})
  first, again = make_examples(task, 4, seed=7), make_examples(task, 4, seed=7)
  expected = RECALL_TASKS["multi_key"](4, seq_len=96, vocab_size=64, num_keys=6, key_len=2,
                                       seed=7)
  for key in ("inputs", "targets"):
    np.testing.assert_array_equal(first[key], again[key])
    np.testing.assert_array_equal(first[key], expected[key])
  assert first["inputs"].shape == (4, 96) and np.any(first["targets"] != IGNORE_LABEL)
  other = make_examples(task, 4, seed=8)
  assert not np.array_equal(first["inputs"], other["inputs"])


@pytest.mark.parametrize("task, message", [
    ({"name": "nope", "seq_len": 64, "vocab_size": 64}, "unknown recall task 'nope'"),
    ({"name": "mqar", "seq_len": 64}, r"needs fields \['vocab_size'\]"),
    ({"name": "mqar", "seq_len": 64, "vocab_size": 64}, r"needs options \['num_kv_pairs'\]"),
    ({"name": "single", "seq_len": 64, "vocab_size": 64, "num_kv_pairs": 3},
     r"has no options \['num_kv_pairs'\]"),
    ({"name": "mqar", "seq_len": 8, "vocab_size": 64, "num_kv_pairs": 8}, "seq_len"),
])
def test_check_task_names_what_is_wrong(task, message):
  with pytest.raises(ValueError, match=message):
    check_task(task)


@pytest.mark.parametrize("name, options", [("mqar", {"num_kv_pairs": 4}), ("single", {}),
                                           ("multi_key", {}), ("variable_tracking", {})])
def test_chance_is_one_over_the_answer_tokens_the_generator_draws_from(name, options):
  task = check_task({"name": name, "seq_len": 64, "vocab_size": 40, **options})
  targets = make_examples(task, 400, seed=3)["targets"]
  answers = np.unique(targets[targets != IGNORE_LABEL])
  # Enough draws to have seen every value token, and none outside the range.
  assert chance_accuracy(task) == 1 / len(answers)
  assert chance_accuracy(task) == (1 / 20 if name == "mqar" else 1 / 19)
