"""Trains a model on a synthetic recall task and scores its recall accuracy.

  python -m experiments.recall --task=mqar --workdir=/tmp/mqar --steps=500 \
      --config=experiments/configs/attn_tiny.py --seq_len=64 --num_kv_pairs=8 --vocab_size=64 \
      --eval_seq_lens=32,64 --eval_num_kv_pairs=4,8
  python -m experiments.recall --task=multi_key --num_keys=8 --filler=repeat ...
  python -m experiments.recall --workdir=/tmp/mqar --eval_file=held_out.npz

Training and scoring are `sdm_jax.training.recall`: each step's batch is drawn from the
task generator (`sdm_jax.data.recall_tasks`) with a seed derived from (train.seed, step),
so a resumed run replays exactly the batches of an uninterrupted one; the loss is the mean
cross-entropy over labelled positions. The model's vocab_size is the task's and its
max_seq_len the longest of --seq_len and --eval_seq_lens. Task options (--num_kv_pairs,
--num_keys, --filler, ...) go to the task's generator; one it does not take is an error.
After training, accuracy (argmax == target over labelled positions) is measured on fresh
held-out examples; the last stdout line is a JSON object with `accuracy`, `n` (examples),
`positions` (labelled positions), `step`, `task`, and `by_seq_len` / `by_num_kv_pairs`
(lists of {seq_len or num_kv_pairs, accuracy, n, positions}) when asked for.

With --eval_file (an .npz holding int32 `inputs` and `targets`, both [n, T], -100 =
ignore), nothing is trained: the workdir's model is scored on that file and the last line
is `{"accuracy": ..., "n": examples, ...}`.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from absl import flags
import numpy as np

from experiments import cli
from experiments import common
from sdm_jax.data.recall_tasks import RECALL_TASKS, check_task, task_options
from sdm_jax.models.config import LMConfig
from sdm_jax.models.lm import LM, init_function
from sdm_jax.training import records
from sdm_jax.training.config import TrainConfig
from sdm_jax.training.recall import (accuracy_by_variant, check_examples, check_variants,
                                     evaluation_variants, held_out_examples,
                                     recall_accuracy, train_recall)
from sdm_jax.training.workdir import (CONFIG_FILE, read_workdir_config, restore_params,
                                      write_workdir_config)

KIND = "recall"
DEFAULT_CONFIG = "attn_tiny"
DEFAULT_NUM_KV_PAIRS = 4  # mqar's generator has no default; the CLI's is a small task.

_CONFIG = common.define_config_flag(DEFAULT_CONFIG)
_TASK = flags.DEFINE_string("task", "mqar", f"Recall task: one of {sorted(RECALL_TASKS)}.")
_WORKDIR = flags.DEFINE_string("workdir", None, "Run directory.", required=True)
_STEPS = flags.DEFINE_integer("steps", None, "Override train.steps.")
_SEQ_LEN = flags.DEFINE_integer("seq_len", 64, "Task sequence length of training.")
_VOCAB_SIZE = flags.DEFINE_integer("vocab_size", 64, "Task vocabulary (also the model's).")
_BATCH_SIZE = flags.DEFINE_integer("batch_size", None, "Override train.batch_size.")
_EVAL_EXAMPLES = flags.DEFINE_integer("eval_examples", 256, "Held-out examples scored after "
                                      "training (per evaluated variant).")
_EVAL_SEQ_LENS = flags.DEFINE_list("eval_seq_lens", [], "Also score the task at these "
                                   "sequence lengths (JSON field by_seq_len).")
_EVAL_NUM_KV_PAIRS = flags.DEFINE_list("eval_num_kv_pairs", [], "mqar: also score at these "
                                       "numbers of key-value pairs (by_num_kv_pairs).")
_EVAL_FILE = flags.DEFINE_string("eval_file", None, "Score the trained workdir on this .npz "
                                 "(inputs, targets int32 [n, T]) instead of training.")

# Task options; a flag left unset keeps the generator's default. Each task takes some of
# them (`sdm_jax.data.recall_tasks.task_options`).
_OPTION_FLAGS = {
    "num_kv_pairs": flags.DEFINE_integer("num_kv_pairs", None, "mqar: key-value pairs "
                                         f"(default {DEFAULT_NUM_KV_PAIRS})."),
    "power_a": flags.DEFINE_float("power_a", None, "mqar: query gaps p(g) ~ g^(power_a - 1)."),
    "random_non_queries": flags.DEFINE_boolean("random_non_queries", None, "mqar: random "
                                               "filler tokens (else zeros)."),
    "num_keys": flags.DEFINE_integer("num_keys", None, "needles: distinct keys."),
    "num_values": flags.DEFINE_integer("num_values", None, "needles: values per key."),
    "num_queries": flags.DEFINE_integer("num_queries", None, "multi_query: keys queried."),
    "key_len": flags.DEFINE_integer("key_len", None, "needles: tokens per key."),
    "value_len": flags.DEFINE_integer("value_len", None, "needles, variable_tracking: tokens "
                                      "per value."),
    "depth": flags.DEFINE_float("depth", None, "needles: insertion depth in [0, 1] (default "
                                "uniform)."),
    "filler": flags.DEFINE_string("filler", None, "needles, variable_tracking: haystack "
                                  "filler mode."),
    "num_chains": flags.DEFINE_integer("num_chains", None, "variable_tracking: chains."),
    "num_hops": flags.DEFINE_integer("num_hops", None, "variable_tracking: hops per chain."),
    "name_len": flags.DEFINE_integer("name_len", None, "variable_tracking: tokens per name."),
}


def task_from_flags() -> dict[str, Any]:
  """The task spec of the flags; ValueError for an unknown task or an option it lacks."""
  options = task_options(_TASK.value)
  task = {"name": _TASK.value, "seq_len": _SEQ_LEN.value, "vocab_size": _VOCAB_SIZE.value}
  for name, flag in _OPTION_FLAGS.items():
    if flag.value is None:
      continue
    if name not in options:
      raise ValueError(f"--{name} is not an option of task {_TASK.value!r}; its options: "
                       f"{sorted(options)}")
    task[name] = flag.value
  if _TASK.value == "mqar":
    task.setdefault("num_kv_pairs", DEFAULT_NUM_KV_PAIRS)
  return check_task(task)


def eval_variants() -> dict[str, list[dict[str, int]]]:
  """The variants the eval flags ask for (`evaluation_variants`)."""
  if _EVAL_NUM_KV_PAIRS.value and _TASK.value != "mqar":
    raise ValueError("--eval_num_kv_pairs applies to --task=mqar only")
  return evaluation_variants(seq_lens=_EVAL_SEQ_LENS.value,
                             num_kv_pairs=_EVAL_NUM_KV_PAIRS.value)


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


def _configs_from_flags(task: dict[str, Any], variants: dict[str, list[dict[str, int]]]
                        ) -> tuple[str, LMConfig, TrainConfig]:
  config = common.loaded_config(_CONFIG)
  if config.get("kind", "lm") != "lm":
    raise ValueError(f"experiments.recall trains pattern-string LMs (config kind 'lm'); "
                     f"config {config.name!r} is of kind {config.get('kind')!r}")
  config.model.vocab_size = task["vocab_size"]
  config.model.max_seq_len = max([task["seq_len"]] + [v["seq_len"] for v in
                                                      variants.get("by_seq_len", [])])
  config.train.seq_len = task["seq_len"]
  common.override_steps(config, _STEPS.value)
  if _BATCH_SIZE.value is not None:
    config.train.batch_size = _BATCH_SIZE.value
  model_config, train_config, _ = common.lm_configs(config)
  return config.name, model_config, train_config


def _train_main(workdir: str) -> dict[str, Any]:
  task = task_from_flags()  # The task's ValueErrors before anything is written.
  variants = eval_variants()
  check_variants(task, variants)
  name, model_config, train_config = _configs_from_flags(task, variants)
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
  held_out = held_out_examples(task, _EVAL_EXAMPLES.value, train_config.seed)
  summary, model, params = train_recall(model_config, train_config, task, workdir, held_out)
  if summary.get("stopped_by"):  # a signal: the step is saved, nothing was scored
    print(f"resume: the same command with --workdir={workdir}")
    return {**summary, "task": task["name"], "workdir": workdir}
  for key, group in variants.items():
    summary[key] = accuracy_by_variant(model, params, task, group,
                                       num_examples=_EVAL_EXAMPLES.value,
                                       seed=train_config.seed,
                                       batch_size=train_config.eval_batch_size)
  return {**summary, "task": task["name"], "workdir": workdir}


def _eval_file_main(workdir: str, path: str) -> dict[str, Any]:
  saved = read_workdir_config(workdir, kind=KIND)
  model_config = LMConfig.from_dict(saved["model"])
  train_config = TrainConfig.from_dict(saved["train"])
  inputs, targets = check_examples(*load_eval_file(path), model_config.vocab_size,
                                   model_config.max_seq_len, f"--eval_file {path!r}")
  model = LM(model_config)
  params, step = restore_params(workdir, init_function(model, train_config.seq_len), train_config)
  result = recall_accuracy(model, params, inputs, targets,
                           batch_size=train_config.eval_batch_size)
  return {**result, "step": step, "task": saved["task"]["name"], "eval_file": path}


def main(argv):
  del argv
  if _EVAL_FILE.value is not None:
    summary = _eval_file_main(_WORKDIR.value, _EVAL_FILE.value)
  else:
    summary = _train_main(_WORKDIR.value)
  print(records.dumps(summary))
  return cli.stop_status(summary.get("stopped_by"))


if __name__ == "__main__":
  cli.run(main)
