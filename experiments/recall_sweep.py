"""Recall against state size: A, S, G and M models of equal width and depth on MQAR.

  python -m experiments.recall_sweep --output_dir=experiments/results/recall_sweep  # H200
  python -m experiments.recall_sweep --output_dir=/tmp/sweep \
      --config=experiments/configs/recall_sweep.py:smoke                           # CPU

Settings are `experiments/configs/recall_sweep.py:<preset>`, any field overridden with
`--config.<field>=value` (`--config.sdm_slots=1024,4096`, `--config.mixers=SM`).

Every model has two layers at width d: a sliding-window layer (window base_window, which
binds each key to the value after it) followed by the mixer under test: `SA` full
attention, `SG` Gated DeltaNet, `SM` Sparse Delta Memory, and for attention restricted to
a window `SS` (both layers at the swept window). Each mixer's state grows along one knob:

  S: the window (windows); G: the key dim K per head, with d / K heads, so the state is
  d x K (gdn_head_dims); M: the slots N of one head (sdm_slots) at W = sdm_writes,
  R = sdm_reads;
  A: none (its cache is the whole context).

Widths, depths, data, steps and learning rate are equal across models; each model's FLOPs
per token (and its mixer's) are reported next to its state, since the knobs move them a
little (M's key scoring grows with sqrt(N), G's recurrence with K). Every model trains on
fresh MQAR batches (`sdm_jax.training.recall`) at seq_len with num_kv_pairs, then is
scored on held-out examples at each of eval_seq_lens (same pairs: longer gaps) and
eval_num_kv_pairs (at seq_len). `results.json` (rewritten after every model, so an
interrupted sweep keeps what finished) and the PNG plots of
`sdm_jax.evaluation.recall_plots` go to --output_dir (`--replot=results.json` redraws them).
The last stdout line is the JSON of results.json. The library behind it is
`sdm_jax.evaluation.recall_sweep`.
"""

from __future__ import annotations

import json
import os

from absl import flags

from experiments import cli
from experiments import common
from sdm_jax.evaluation import recall_plots
from sdm_jax.evaluation.recall_sweep import run_sweep
from sdm_jax.training import records

_CONFIG = common.define_config_flag(
    "recall_sweep", arg="h200",
    help_string="Sweep settings: experiments/configs/recall_sweep.py:<preset> (h200 or "
    "smoke), each field overridable with --config.<field>=value.")
_OUTPUT_DIR = flags.DEFINE_string("output_dir", "experiments/results/recall_sweep",
                                  "results.json and the PNG plots go here.")
_WORKDIR_ROOT = flags.DEFINE_string("workdir_root", None, "Checkpoints go to <root>/<model> "
                                    "(default: a new temporary directory).")
_REPLOT = flags.DEFINE_string("replot", None, "Train nothing: redraw the plots next to this "
                              "results.json and print its table.")


def _replot(path: str) -> None:
  with open(path) as f:
    results = json.load(f)
  written = recall_plots.write_plots(results, os.path.dirname(os.path.abspath(path)))
  print(recall_plots.format_table(results))
  print("wrote", ", ".join(written))


def main(argv):
  del argv
  if _REPLOT.value:
    return _replot(_REPLOT.value)
  results = run_sweep(common.loaded_config(_CONFIG), output_dir=_OUTPUT_DIR.value,
                      workdir_root=_WORKDIR_ROOT.value)
  print(records.dumps(results))
  return cli.stop_status(results.get("stopped_by"))


if __name__ == "__main__":
  cli.run(main)
