"""All synthetic recall generators under one name each, for benchmark harnesses.

Every generator is called as `make(num_examples, *, seq_len, vocab_size, seed, ...)` and
returns {"inputs", "targets"} int32 [num_examples, seq_len], targets -100 except where the
next token is an answer to recall. `mqar` also needs `num_kv_pairs`.

A task spec is a JSON-ready dict {"name", "seq_len", "vocab_size", **options}: `check_task`
validates it and `make_examples` draws from it.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import numpy as np

from sdm_jax.data._recall_common import IGNORE_LABEL
from sdm_jax.data.mqar import mqar
from sdm_jax.data.needle import (NEEDLE_TASKS, needle_in_haystack, needle_multi_key,
                                 needle_multi_query, needle_multi_value, needle_single,
                                 needle_token_ranges, variable_tracking)

RECALL_TASKS: dict[str, Callable[..., dict[str, np.ndarray]]] = {"mqar": mqar,
                                                                 **NEEDLE_TASKS}

__all__ = ["IGNORE_LABEL", "RECALL_TASKS", "chance_accuracy", "check_task", "make_examples",
           "task_options", "mqar", "needle_in_haystack", "needle_single",
           "needle_multi_key", "needle_multi_value", "needle_multi_query",
           "variable_tracking"]


# Keyword arguments every generator takes; the rest of its keywords are the task's options.
_COMMON_ARGUMENTS = ("num_examples", "seq_len", "vocab_size", "seed")


def task_options(name: str) -> dict[str, Any]:
  """{option: default} of a task's generator (default `inspect.Parameter.empty` when the
  option is required, e.g. mqar's num_kv_pairs); ValueError for an unknown task."""
  if name not in RECALL_TASKS:
    raise ValueError(f"unknown recall task {name!r}; known tasks: {sorted(RECALL_TASKS)}")
  parameters = inspect.signature(RECALL_TASKS[name]).parameters
  return {key: p.default for key, p in parameters.items() if key not in _COMMON_ARGUMENTS}


def check_task(task: dict[str, Any]) -> dict[str, Any]:
  """Validates a task spec {"name", "seq_len", "vocab_size", **options}; returns it.

  Options are the generator's keywords (see `task_options`); every required one must be
  present and no other may be. The generator itself checks the values (drawing one
  example), so errors surface before any training.
  """
  missing = [key for key in ("name", "seq_len", "vocab_size") if key not in task]
  if missing:
    raise ValueError(f"a recall task needs fields {missing}, got {task}")
  options = task_options(task["name"])
  given = {key: value for key, value in task.items() if key not in ("name", "seq_len",
                                                                     "vocab_size")}
  unknown = sorted(set(given) - set(options))
  if unknown:
    raise ValueError(f"task {task['name']!r} has no options {unknown}; its options: "
                     f"{sorted(options)}")
  required = [key for key, default in options.items()
              if default is inspect.Parameter.empty and key not in given]
  if required:
    raise ValueError(f"task {task['name']!r} needs options {required}")
  make_examples(task, 1, seed=0)
  return task


def make_examples(task: dict[str, Any], num_examples: int, seed: int
                  ) -> dict[str, np.ndarray]:
  """{"inputs", "targets"} int32 [num_examples, task["seq_len"]] of a task spec
  {"name", "seq_len", "vocab_size", **options}, a pure function of (task, seed)."""
  options = {key: value for key, value in task.items() if key != "name"}
  return RECALL_TASKS[task["name"]](num_examples, seed=seed, **options)


def chance_accuracy(task: dict[str, Any]) -> float:
  """Accuracy of guessing each answer token uniformly among the task's value tokens: mqar's
  values are [vocab_size // 2, vocab_size), the needle tasks' the upper range of
  `needle_token_ranges`."""
  if task["name"] == "mqar":
    return 1 / (task["vocab_size"] - task["vocab_size"] // 2)
  if task["name"] not in RECALL_TASKS:
    raise ValueError(f"unknown recall task {task['name']!r}; known tasks: "
                     f"{sorted(RECALL_TASKS)}")
  _, (value_low, value_high) = needle_token_ranges(task["vocab_size"])
  return 1 / (value_high - value_low)
