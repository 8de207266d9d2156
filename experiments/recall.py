"""Trains a model on a synthetic recall task and scores its recall accuracy.

  python -m experiments.recall --task=mqar --workdir=/tmp/mqar --steps=500 \
      --config=attn_tiny --seq_len=64 --num_kv_pairs=8 --vocab_size=64
  python -m experiments.recall --workdir=/tmp/mqar --eval_file=held_out.npz

Training draws each step's batch from the task generator (`sdm_jax.data.recall_tasks`)
with a seed derived from (train.seed, step), so a resumed run replays exactly the batches
of an uninterrupted one; the loss is the mean cross-entropy over labelled positions
(target != -100). The model's vocab_size and max_seq_len are set from the task flags.
After training, accuracy (argmax == target over labelled positions) is measured on a
fresh held-out set drawn with a different seed; the last stdout line is a JSON object
with `accuracy`, `n` (examples), `positions` (labelled positions), `step` and `task`.

With --eval_file (an .npz holding int32 `inputs` and `targets`, both [n, T], -100 =
ignore), nothing is trained: the workdir's model is scored on that file and the last line
is `{"accuracy": ..., "n": examples, ...}`.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, Callable

from absl import app
from absl import flags
import jax
import jax.numpy as jnp
import numpy as np

from experiments import common
from experiments.config_flag import define_config_flag
from sdm_jax.data.recall_tasks import IGNORE_LABEL, RECALL_TASKS
from sdm_jax.models.config import LMConfig
from sdm_jax.models.lm import LM, cross_entropy
from sdm_jax.training.config import TrainConfig
from sdm_jax.training.trainer import (CONFIG_FILE, fit, read_workdir_config, restore_params,
                                      write_workdir_config)

KIND = "recall"
DEFAULT_CONFIG = "attn_tiny"
# SeedSequence "purposes", so training batches and the held-out set never share a seed.
_TRAIN_STREAM, _EVAL_STREAM = 0, 1

_CONFIG = define_config_flag(DEFAULT_CONFIG)
_TASK = flags.DEFINE_string("task", "mqar", f"Recall task: one of {sorted(RECALL_TASKS)}.")
_WORKDIR = flags.DEFINE_string("workdir", None, "Run directory.", required=True)
_STEPS = flags.DEFINE_integer("steps", None, "Override train.steps.")
_SEQ_LEN = flags.DEFINE_integer("seq_len", 64, "Task sequence length (also the model's "
                                "max_seq_len).")
_NUM_KV_PAIRS = flags.DEFINE_integer("num_kv_pairs", 4, "Key-value pairs (mqar only).")
_VOCAB_SIZE = flags.DEFINE_integer("vocab_size", 64, "Task vocabulary (also the model's).")
_BATCH_SIZE = flags.DEFINE_integer("batch_size", None, "Override train.batch_size.")
_EVAL_EXAMPLES = flags.DEFINE_integer("eval_examples", 256, "Held-out examples scored after "
                                      "training.")
_EVAL_FILE = flags.DEFINE_string("eval_file", None, "Score the trained workdir on this .npz "
                                 "(inputs, targets int32 [n, T]) instead of training.")


def task_generator(name: str) -> Callable[..., dict[str, np.ndarray]]:
  """The generator of a recall task; ValueError listing the known ones otherwise."""
  if name not in RECALL_TASKS:
    raise ValueError(f"unknown recall task {name!r}; known tasks: {sorted(RECALL_TASKS)}")
  return RECALL_TASKS[name]


def make_examples(task: dict[str, Any], num_examples: int, seed: int) -> dict[str, np.ndarray]:
  """{"inputs", "targets"} int32 [num_examples, task["seq_len"]] of a task spec
  {"name", "seq_len", "vocab_size", "num_kv_pairs"} (num_kv_pairs used by mqar only)."""
  kwargs = {"seq_len": task["seq_len"], "vocab_size": task["vocab_size"], "seed": seed}
  if task["name"] == "mqar":
    kwargs["num_kv_pairs"] = task["num_kv_pairs"]
  return task_generator(task["name"])(num_examples, **kwargs)


def derived_seed(*parts: int) -> int:
  """A 32-bit seed that is a pure function of the integer `parts`."""
  return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(1)[0])


def train_batch(task: dict[str, Any], *, step: int, batch_size: int, seed: int) -> np.ndarray:
  """The batch of a training step: int32 [batch_size, 2, seq_len] (inputs, targets)."""
  examples = make_examples(task, batch_size, derived_seed(seed, _TRAIN_STREAM, step))
  return np.stack([examples["inputs"], examples["targets"]], axis=1)


def recall_loss_fn(model: LM):
  """(params, batch [B, 2, T]) -> (mean cross-entropy over labelled positions, {})."""
  def loss_fn(params, batch: jax.Array):
    inputs, targets = batch[:, 0], batch[:, 1]
    mask = targets != IGNORE_LABEL
    nll = cross_entropy(model.apply(params, inputs), jnp.where(mask, targets, 0))
    return jnp.sum(nll * mask) / jnp.maximum(jnp.sum(mask), 1), {}
  return loss_fn


def recall_accuracy(model: LM, params, inputs: np.ndarray, targets: np.ndarray, *,
                    batch_size: int) -> dict[str, Any]:
  """Argmax accuracy over labelled positions of inputs/targets int32 [n, T].

  Returns {"accuracy", "n" (examples), "positions" (labelled positions)}.
  """
  predict = jax.jit(lambda p, x: jnp.argmax(model.apply(p, x), axis=-1))
  correct = total = 0
  for start in range(0, inputs.shape[0], batch_size):
    x, y = inputs[start:start + batch_size], targets[start:start + batch_size]
    mask = y != IGNORE_LABEL
    predicted = np.asarray(predict(params, jnp.asarray(x)))
    correct += int(np.sum((predicted == y) & mask))
    total += int(np.sum(mask))
  return {"accuracy": correct / total if total else float("nan"), "n": int(inputs.shape[0]),
          "positions": total}


def check_examples(inputs: Any, targets: Any, vocab_size: int, max_seq_len: int,
                   source: str) -> tuple[np.ndarray, np.ndarray]:
  """Validates labelled examples for a model; returns them as int32 [n, T] arrays."""
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


def load_eval_file(path: str) -> tuple[np.ndarray, np.ndarray]:
  """(inputs, targets) of an .npz; ValueError if missing or lacking either array."""
  if not os.path.exists(path):
    raise ValueError(f"--eval_file {path!r} does not exist")
  with np.load(path) as data:
    missing = [name for name in ("inputs", "targets") if name not in data.files]
    if missing:
      raise ValueError(f"--eval_file {path!r} lacks arrays {missing} (has {data.files}); "
                       "it needs int32 `inputs` and `targets` [n, T]")
    return data["inputs"], data["targets"]


def train_recall(model_config: LMConfig, train_config: TrainConfig, task: dict[str, Any],
                 workdir: str, held_out: dict[str, np.ndarray], *,
                 log: Callable[[str], None] = print) -> dict[str, Any]:
  """Trains (or resumes) an LM on a recall task with `fit`; returns its summary, whose
  evaluation is `recall_accuracy` on the `held_out` examples."""
  model = LM(model_config)
  sample = jnp.zeros((1, task["seq_len"]), jnp.int32)
  return fit(
      init_params=jax.jit(lambda rng: model.init(rng, sample)),
      loss_fn=recall_loss_fn(model),
      evaluate=lambda params: recall_accuracy(model, params, held_out["inputs"],
                                              held_out["targets"],
                                              batch_size=train_config.eval_batch_size),
      draw_batch=lambda step: train_batch(task, step=step, batch_size=train_config.batch_size,
                                          seed=train_config.seed),
      config=train_config, workdir=workdir, log=log)


def _configs_from_flags() -> tuple[str, LMConfig, TrainConfig, dict[str, Any]]:
  config = _CONFIG.value
  if config.get("kind", "lm") != "lm":
    raise ValueError(f"experiments.recall trains pattern-string LMs (config kind 'lm'); "
                     f"config {config.name!r} is of kind {config.get('kind')!r}")
  task_generator(_TASK.value)
  task = {"name": _TASK.value, "seq_len": _SEQ_LEN.value, "vocab_size": _VOCAB_SIZE.value}
  if _TASK.value == "mqar":
    task["num_kv_pairs"] = _NUM_KV_PAIRS.value
  config.model.vocab_size = _VOCAB_SIZE.value
  config.model.max_seq_len = _SEQ_LEN.value
  config.train.seq_len = _SEQ_LEN.value
  common.override_steps(config, _STEPS.value)
  if _BATCH_SIZE.value is not None:
    config.train.batch_size = _BATCH_SIZE.value
  model_config, train_config, _ = common.lm_configs(config)
  return config.name, model_config, train_config, task


def _train_main(workdir: str) -> dict[str, Any]:
  name, model_config, train_config, task = _configs_from_flags()
  make_examples(task, 1, 0)  # The generator's ValueErrors before anything is written.
  saved_path = os.path.join(workdir, CONFIG_FILE)
  if os.path.exists(saved_path):
    saved = read_workdir_config(workdir, kind=KIND)
    if saved.get("task") != task:
      raise ValueError(f"workdir {workdir} holds a run of task {saved.get('task')}, not "
                       f"{task}; use a new --workdir or the same task flags")
  write_workdir_config(workdir, {"kind": KIND, "name": name, "model": model_config.to_dict(),
                                 "train": dataclasses.asdict(train_config), "task": task})
  print(f"recall task {task}: config {name}, pattern {model_config.layer_kinds}, d_model "
        f"{model_config.d_model}; workdir {workdir}")
  held_out = make_examples(task, _EVAL_EXAMPLES.value,
                           derived_seed(train_config.seed, _EVAL_STREAM))
  summary = train_recall(model_config, train_config, task, workdir, held_out)
  return {**summary, "task": task["name"], "workdir": workdir}


def _eval_file_main(workdir: str, path: str) -> dict[str, Any]:
  saved = read_workdir_config(workdir, kind=KIND)
  model_config = LMConfig.from_dict(saved["model"])
  train_config = TrainConfig.from_dict(saved["train"])
  inputs, targets = check_examples(*load_eval_file(path), model_config.vocab_size,
                                   model_config.max_seq_len, f"--eval_file {path!r}")
  model = LM(model_config)
  sample = jnp.zeros((1, train_config.seq_len), jnp.int32)
  params, step = restore_params(workdir, lambda rng: model.init(rng, sample), train_config)
  result = recall_accuracy(model, params, inputs, targets,
                           batch_size=train_config.eval_batch_size)
  return {**result, "step": step, "task": saved["task"]["name"], "eval_file": path}


def main(argv):
  del argv
  common.quiet_logging()
  if _EVAL_FILE.value is not None:
    summary = _eval_file_main(_WORKDIR.value, _EVAL_FILE.value)
  else:
    summary = _train_main(_WORKDIR.value)
  print(json.dumps(summary))


if __name__ == "__main__":
  app.run(main)
