"""Recall against state size: A, S, G and M models of equal width and depth on a recall
task (MQAR by default, or a needle task).

  python -m experiments.recall_sweep --output_dir=experiments/results/recall_sweep  # H200
  python -m experiments.recall_sweep --output_dir=/tmp/sweep \
      --config=experiments/configs/recall_sweep.py:smoke                           # CPU
  python -m experiments.recall_sweep --config=experiments/configs/recall_sweep.py:mqar512_base \
      --results_file=experiments/results/recall_study_h200.json \
      --workdir_root=workdirs/recall_study                                         # H200

Settings are `experiments/configs/recall_sweep.py:<preset>`, any field overridden with
`--config.<field>=value` (`--config.sdm_slots=1024,4096`, `--config.mixers=SM`).

Every model has two layers at width d: a sliding-window layer (window base_window, which
binds each key to the value after it) followed by the mixer under test: `SA` full
attention, `SG` Gated DeltaNet, `SM` Sparse Delta Memory, and for attention restricted to
a window `SS` (both layers at the swept window). Each mixer's state grows along one knob:

  S: the window (windows); G: the key dim K per head, with d / K heads, so the state is
  d x K (gdn_head_dims); M: the slots N of one head (sdm_slots) at W = sdm_writes,
  R = sdm_reads, once per M0 learning-rate multiplier (m0_lr_multipliers), and with
  sdm_match_gdn the SDM mixer of equal FLOPs to each G (`sdm_matching_gdn`: W = R = K);
  A: none (its cache is the whole context).

Widths, depths, data, the step cap and learning rates are equal across models (each model
trains once per learning rate of peak_lrs and per training seed of seeds; held-out
examples are the same for every seed); each
model's FLOPs per token (and its mixer's) are reported next to its state, since the knobs
move them (M's key scoring grows with sqrt(N), G's recurrence with K). Every model trains
on fresh batches of the task (`sdm_jax.training.recall`) at seq_len, up to `steps` or until
the stop rule (plateau_* settings, `sdm_jax.training.plateau`) ends it, then is scored on
held-out examples at each of eval_seq_lens (mqar: same pairs, longer gaps) and
eval_num_kv_pairs (at seq_len). SDM runs also record the slots their trained model writes
and the M0 rows training moved (`sdm_jax.evaluation.slot_usage`).

Results: with --output_dir, `results.json` there (rewritten after every model, so an
interrupted sweep keeps what finished) and the PNG plots of `sdm_jax.evaluation.
recall_plots`. With --results_file, each finished run appends its records (one per scored
length and pair count) to that JSON list, and a run already in it is skipped: run a preset
again after a cut (SIGTERM stops after the current step with a checkpoint; keep
--workdir_root to resume it) and only what is missing trains; the plots go next to the
file. `--replot=<file>.json` redraws either kind. The last stdout line is the JSON of
results.json, or of what this call ran and skipped. The library behind it is
`sdm_jax.evaluation.recall_sweep`. `--init_overlap` trains nothing: for each M point of an
MQAR preset it prints how many slots the untrained model's reads at the query positions
share with its writes at the queried values' positions, beside W R / N (issue 18: why large
tables train slowly).
"""

from __future__ import annotations

import json
import os

from absl import flags

from experiments import cli
from experiments import common
from sdm_jax.evaluation import recall_plots
from sdm_jax.evaluation.recall_sweep import init_overlaps, run_sweep
from sdm_jax.training import records

_CONFIG = common.define_config_flag(
    "recall_sweep", arg="h200",
    help_string="Sweep settings: experiments/configs/recall_sweep.py:<preset> (h200, smoke, "
    "the study presets mqar512_*, mqar2048_*, niah_*), each field overridable with "
    "--config.<field>=value.")
_OUTPUT_DIR = flags.DEFINE_string("output_dir", "experiments/results/recall_sweep",
                                  "results.json and the PNG plots go here (not used with "
                                  "--results_file).")
_RESULTS_FILE = flags.DEFINE_string("results_file", None, "Append each run's records to this "
                                    "JSON list instead, skipping runs already in it; the "
                                    "plots go next to it.")
_WORKDIR_ROOT = flags.DEFINE_string("workdir_root", None, "Checkpoints go to <root>/<model> "
                                    "(default: a new temporary directory).")
_REPLOT = flags.DEFINE_string("replot", None, "Train nothing: redraw the plots next to this "
                              "results.json or results file and print its table.")


_INIT_OVERLAP = flags.DEFINE_bool(
    "init_overlap", False, "Train nothing: print, for each M point of the (MQAR) settings "
    "and each seed, the slots its initial model's reads at the query positions share with "
    "its writes at the queried values' positions, beside W R / N.")


def _print_init_overlaps(settings) -> None:
  rows = init_overlaps(settings)
  print(f"{'run':<22} {'N':>8} {'W':>4} {'R':>4} {'seed':>4} {'shared slots':>13} "
        f"{'W R / N':>9}")
  for row in rows:
    print(f"{row['name']:<22} {row['sdm_slots']:>8,} {row['sdm_writes']:>4} "
          f"{row['sdm_reads']:>4} {row['seed']:>4} {row['overlap_slots']:>13.4f} "
          f"{row['chance_slots']:>9.4f}")
  print(records.dumps({"init_overlaps": rows}))


def _replot(path: str) -> None:
  if not os.path.exists(path):
    raise ValueError(f"--replot: {path} does not exist")
  with open(path) as f:
    results = json.load(f)
  if isinstance(results, list):
    written = recall_plots.write_record_plots(results, path)
    print(recall_plots.format_record_table(results))
  else:
    written = recall_plots.write_plots(results, os.path.dirname(os.path.abspath(path)))
    print(recall_plots.format_table(results))
  print("wrote", ", ".join(written))


def main(argv):
  del argv
  if _REPLOT.value:
    return _replot(_REPLOT.value)
  if _INIT_OVERLAP.value:
    return _print_init_overlaps(common.loaded_config(_CONFIG))
  if _RESULTS_FILE.value:
    results = run_sweep(common.loaded_config(_CONFIG), results_file=_RESULTS_FILE.value,
                        workdir_root=_WORKDIR_ROOT.value)
  else:
    results = run_sweep(common.loaded_config(_CONFIG), output_dir=_OUTPUT_DIR.value,
                        workdir_root=_WORKDIR_ROOT.value)
  # The new records are in the results file; the last line says what ran.
  print(records.dumps({k: v for k, v in results.items() if k != "records"}))
  return cli.stop_status(results.get("stopped_by"))


if __name__ == "__main__":
  cli.run(main)
