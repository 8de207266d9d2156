"""Recall against state size: A, S, G and M models of equal width and depth on MQAR.

  python -m experiments.recall_sweep --output_dir=experiments/results/recall_sweep  # H200
  python -m experiments.recall_sweep --preset=smoke --output_dir=/tmp/sweep          # CPU

Every model has two layers at width d: a sliding-window layer (window --base_window, which
binds each key to the value after it) followed by the mixer under test: `SA` full
attention, `SG` Gated DeltaNet, `SM` Sparse Delta Memory, and for attention restricted to
a window `SS` (both layers at the swept window). Each mixer's state grows along one knob:

  S: the window (--windows); G: the key dim K per head, with d / K heads, so the state is
  d x K (--gdn_head_dims); M: the slots N of one head (--sdm_slots) at W = --sdm_writes,
  R = --sdm_reads;
  A: none (its cache is the whole context).

Widths, depths, data, steps and learning rate are equal across models; each model's FLOPs
per token (and its mixer's) are reported next to its state, since the knobs move them a
little (M's key scoring grows with sqrt(N), G's recurrence with K). Every model trains on
fresh MQAR batches (`sdm_jax.training.recall`) at --seq_len with --num_kv_pairs, then is
scored on held-out examples at each of --eval_seq_lens (same pairs: longer gaps) and
--eval_num_kv_pairs (at --seq_len). `results.json` (rewritten after every model, so an
interrupted sweep keeps what finished) and the PNG plots of `experiments.recall_plots` go
to --output_dir. The last stdout line is the JSON of results.json. The
library behind it is `experiments.recall_sweeping`.
"""

from __future__ import annotations

import json
from typing import Any

from absl import app
from absl import flags

from experiments import common
from experiments.recall_sweeping import MIXERS, PRESETS, run_sweep

_PRESET = flags.DEFINE_enum("preset", "h200", list(PRESETS), "Defaults of every setting "
                            "below.")
_OUTPUT_DIR = flags.DEFINE_string("output_dir", "experiments/results/recall_sweep",
                                  "results.json and the PNG plots go here.")
_WORKDIR_ROOT = flags.DEFINE_string("workdir_root", None, "Checkpoints go to <root>/<model> "
                                    "(default: a new temporary directory).")
_MIXERS = flags.DEFINE_list("mixers", list(MIXERS), f"Which of {MIXERS} to sweep.")
_INTS = {name: flags.DEFINE_integer(name, None, help_) for name, help_ in (
    ("d_model", "Width of every model."),
    ("num_heads", "Attention heads."),
    ("base_window", "Window of the first (binding) layer of the SA, SG and SM models."),
    ("sdm_writes", "Slots written per token W of the M models."),
    ("sdm_reads", "Slots read per token R of the M models."),
    ("seq_len", "Training sequence length."),
    ("num_kv_pairs", "MQAR key-value pairs in training."),
    ("vocab_size", "MQAR vocabulary."),
    ("steps", "Training steps of every model."),
    ("batch_size", "Training batch."),
    ("eval_examples", "Held-out examples per evaluated variant."))}
_LISTS = {name: flags.DEFINE_list(name, None, help_) for name, help_ in (
    ("windows", "S knob: windows of the SS models."),
    ("gdn_head_dims", "G knob: key dims K (d / K heads)."),
    ("sdm_slots", "M knob: slots N of the single head (perfect squares)."),
    ("eval_seq_lens", "Score every model at these sequence lengths."),
    ("eval_num_kv_pairs", "Score every model at these numbers of pairs."))}
_PEAK_LR = flags.DEFINE_float("peak_lr", None, "Peak learning rate.")
_COMPUTE_DTYPE = flags.DEFINE_enum("compute_dtype", None, ["float32", "bfloat16"],
                                   "Activation dtype.")


def settings_from_flags() -> dict[str, Any]:
  """The preset's settings with every flag that was given applied."""
  settings = dict(PRESETS[_PRESET.value])
  for name, flag in _INTS.items():
    if flag.value is not None:
      settings[name] = flag.value
  for name, flag in _LISTS.items():
    if flag.value is not None:
      settings[name] = [int(v) for v in flag.value]
  for name, flag in (("peak_lr", _PEAK_LR), ("compute_dtype", _COMPUTE_DTYPE)):
    if flag.value is not None:
      settings[name] = flag.value
  unknown = sorted(set(_MIXERS.value) - set(MIXERS))
  if unknown or not _MIXERS.value:
    raise ValueError(f"--mixers must be a non-empty subset of {MIXERS}, got {_MIXERS.value}")
  settings["mixers"] = list(_MIXERS.value)
  return settings


def main(argv):
  del argv
  common.quiet_logging()
  results = run_sweep(settings_from_flags(), output_dir=_OUTPUT_DIR.value,
                      workdir_root=_WORKDIR_ROOT.value)
  print(json.dumps(results))


if __name__ == "__main__":
  app.run(main)
