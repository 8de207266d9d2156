"""Training and scoring LMs on synthetic recall tasks (`sdm_jax.data.recall_tasks`).

Training draws each step's batch from the task generator with a seed derived from
(seed, step), so a resumed run replays exactly the batches of an uninterrupted one; the
loss is the mean cross-entropy over labelled positions (target != -100). Accuracy is
argmax == target over labelled positions, on held-out examples drawn from another seed
stream, so training and evaluation never share a seed.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from sdm_jax import sharding
from sdm_jax.data.recall_tasks import IGNORE_LABEL, check_task, make_examples
from sdm_jax.models.config import LMConfig
from sdm_jax.models.lm import LM, cross_entropy, init_function, logits_and_penalty
from sdm_jax.training.config import TrainConfig
from sdm_jax.training.loop import fit

# SeedSequence "purposes", so training batches and held-out sets never share a seed.
TRAIN_STREAM, EVAL_STREAM = 0, 1


def derived_seed(*parts: int) -> int:
  """A 32-bit seed that is a pure function of the integer `parts`."""
  return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(1)[0])


def held_out_examples(task: dict[str, Any], num_examples: int, seed: int
                      ) -> dict[str, np.ndarray]:
  """Evaluation examples of a task, from the evaluation seed stream of `seed`."""
  return make_examples(task, num_examples, derived_seed(seed, EVAL_STREAM))


def recall_batch(task: dict[str, Any], *, step: int, batch_size: int, seed: int) -> np.ndarray:
  """The batch of a training step: int32 [batch_size, 2, seq_len] (inputs, targets)."""
  examples = make_examples(task, batch_size, derived_seed(seed, TRAIN_STREAM, step))
  return np.stack([examples["inputs"], examples["targets"]], axis=1)


def recall_loss_fn(model: LM):
  """(params, batch [B, 2, T]) -> (mean cross-entropy over labelled positions, plus
  `logits_and_penalty`'s penalty (0 unless the model weighs its addressing balance);
  metrics)."""
  def loss_fn(params, batch: jax.Array):
    inputs, targets = batch[:, 0], batch[:, 1]
    mask = targets != IGNORE_LABEL
    logits, penalty, metrics = logits_and_penalty(model, params, inputs)
    nll = cross_entropy(logits, jnp.where(mask, targets, 0))
    return jnp.sum(nll * mask) / jnp.maximum(jnp.sum(mask), 1) + penalty, metrics
  return loss_fn


def check_examples(inputs: Any, targets: Any, vocab_size: int, max_seq_len: int,
                   source: str) -> tuple[np.ndarray, np.ndarray]:
  """Labelled examples (inputs, targets [n, T]; targets IGNORE_LABEL where unscored) for a
  model of `vocab_size` ids and `max_seq_len` positions, as int32 arrays; ValueError,
  beginning with `source` (where they came from), for any that do not fit."""
  inputs, targets = np.asarray(inputs), np.asarray(targets)
  for name, array in (("inputs", inputs), ("targets", targets)):
    if array.ndim != 2 or not np.issubdtype(array.dtype, np.integer):
      raise ValueError(f"{source}: {name} must be an integer array [n, T], got dtype "
                       f"{array.dtype} shape {array.shape}")
  if inputs.shape != targets.shape or inputs.shape[0] < 1 or inputs.shape[1] < 1:
    raise ValueError(f"{source}: inputs {inputs.shape} and targets {targets.shape} must have "
                     "the same non-empty shape [n, T]")
  if inputs.shape[1] > max_seq_len:
    raise ValueError(f"{source}: sequence length {inputs.shape[1]} exceeds the model's "
                     f"max_seq_len ({max_seq_len})")
  labels = targets[targets != IGNORE_LABEL]
  for name, ids in (("inputs", inputs), ("targets", labels)):
    if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= vocab_size):
      raise ValueError(f"{source}: {name} hold token ids in [{int(ids.min())}, "
                       f"{int(ids.max())}], outside the model's vocabulary [0, {vocab_size})"
                       f" (targets may also be {IGNORE_LABEL} = ignore)")
  return inputs.astype(np.int32), targets.astype(np.int32)


def recall_accuracy(model: LM, params, inputs: np.ndarray, targets: np.ndarray, *,
                    batch_size: int) -> dict[str, Any]:
  """Argmax accuracy over labelled positions of inputs/targets int32 [n, T].

  Returns {"accuracy", "n" (examples), "positions" (labelled positions)}.
  """
  predict = jax.jit(lambda p, x: sharding.gathered(jnp.argmax(model.apply(p, x), axis=-1)))
  correct = total = 0
  for start in range(0, inputs.shape[0], batch_size):
    x, y = inputs[start:start + batch_size], targets[start:start + batch_size]
    mask = y != IGNORE_LABEL
    predicted = np.asarray(predict(params, jnp.asarray(x)))
    correct += int(np.sum((predicted == y) & mask))
    total += int(np.sum(mask))
  return {"accuracy": correct / total if total else float("nan"), "n": int(inputs.shape[0]),
          "positions": total}


def evaluation_variants(*, seq_lens: Sequence[int] = (), num_kv_pairs: Sequence[int] = ()
                        ) -> dict[str, list[dict[str, int]]]:
  """{"by_seq_len": [{"seq_len": L}, ...], "by_num_kv_pairs": [{"num_kv_pairs": P}, ...]},
  each group present when its list is non-empty: the variants `accuracy_by_variant` scores."""
  variants = {}
  if seq_lens:
    variants["by_seq_len"] = [{"seq_len": int(n)} for n in seq_lens]
  if num_kv_pairs:
    variants["by_num_kv_pairs"] = [{"num_kv_pairs": int(n)} for n in num_kv_pairs]
  return variants


def check_variants(task: dict[str, Any], variants: dict[str, list[dict[str, Any]]]) -> None:
  """ValueError (from `check_task`) for the first variant of `task` that is not a valid
  task, so a bad evaluation setting fails before training rather than after it."""
  for group in variants.values():
    for variant in group:
      check_task({**task, **variant})


def accuracy_by_variant(model: LM, params, task: dict[str, Any],
                        variants: Sequence[dict[str, Any]], *, num_examples: int, seed: int,
                        batch_size: int) -> list[dict[str, Any]]:
  """Accuracy on held-out examples of each variant of `task` (fields it changes, e.g.
  {"seq_len": 512} or {"num_kv_pairs": 16}); returns [{**variant, "accuracy", "n",
  "positions"}] in order. Every variant must be a valid task (`check_task`)."""
  results = []
  for variant in variants:
    varied = check_task({**task, **variant})
    examples = held_out_examples(varied, num_examples, seed)
    results.append({**variant, **recall_accuracy(model, params, examples["inputs"],
                                                 examples["targets"], batch_size=batch_size)})
  return results


def train_recall(model_config: LMConfig, train_config: TrainConfig, task: dict[str, Any],
                 workdir: str, held_out: dict[str, np.ndarray], *,
                 log: Callable[[str], None] = print,
                 stop_rule: Callable[[Sequence[tuple[int, float]]], str | None] | None = None
                 ) -> tuple[dict[str, Any], LM, Any]:
  """Trains (or resumes) an LM on a recall task with `fit` (`stop_rule`: fit's, e.g. a
  `plateau.PlateauRule`).

  Returns (summary, model, params): the summary's evaluation is `recall_accuracy` on the
  `held_out` examples.
  """
  check_task(task)
  if model_config.max_seq_len < task["seq_len"]:
    raise ValueError(f"LMConfig.max_seq_len ({model_config.max_seq_len}) must be at least "
                     f"the task's seq_len ({task['seq_len']})")
  model = LM(model_config)
  result = fit(
      init_params=init_function(model, task["seq_len"]),
      loss_fn=recall_loss_fn(model),
      evaluate=lambda params: recall_accuracy(model, params, held_out["inputs"],
                                              held_out["targets"],
                                              batch_size=train_config.eval_batch_size),
      draw_batch=lambda step: recall_batch(task, step=step, batch_size=train_config.batch_size,
                                          seed=train_config.seed),
      config=train_config, workdir=workdir, log=log, stop_rule=stop_rule)
  return result.summary, model, result.state.params
