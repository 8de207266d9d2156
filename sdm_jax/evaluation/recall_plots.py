"""Plots and tables of the recall sweep's results (`recall_sweep`).

  python -m experiments.recall_sweep --replot=experiments/results/recall_sweep/results.json
  python -m experiments.recall_sweep --replot=experiments/results/recall_study_h200.json

A results.json (a dict with "models") gets its PNGs redrawn next to it:
  accuracy_vs_state.png: accuracy at the training length against the swept layer's state
    per sequence (bytes, log scale), one line per mixer;
  accuracy_vs_context.png: accuracy against context length (same number of pairs), one
    line per model.
A results file of measurement records (a JSON list, `recall_sweep.measurement_records`)
gets <stem>_accuracy_vs_state.png (the same, Zoology-style: one panel per task, seq_len and
pairs; one line per mixer, SDM split by W = R and M0 learning-rate multiplier; a model
trained at several learning rates shows its best, a model trained with several seeds the
median over them, each seed a faint dot) and, when
some run was scored at several lengths, <stem>_accuracy_vs_context.png (one panel per
task; one line per run).
"""

from __future__ import annotations

import os
import statistics
from typing import Any

MIXER_NAMES = {"A": "full attention (SA)", "S": "sliding window (SS)",
               "G": "Gated DeltaNet (SG)", "M": "Sparse Delta Memory (SM)"}
MIXER_COLORS = {"A": "tab:gray", "S": "tab:blue", "G": "tab:green", "M": "tab:red"}


def options_of(task: dict[str, Any]) -> dict[str, Any]:
  """A task spec's options besides its name, lengths and vocabulary (the needle tasks'
  num_keys, num_queries, filler, ...): what records keep as `task_options`."""
  return {k: v for k, v in task.items()
          if k not in ("name", "seq_len", "num_kv_pairs", "vocab_size")}


def _label(record: dict[str, Any]) -> str:
  if record["knob"] is None:
    return record["mixer"]
  return f"{record['mixer']} {record['knob']}={record['value']:,}"


def write_plots(results: dict[str, Any], output_dir: str) -> list[str]:
  """Writes the two PNGs of the module docstring to output_dir; returns their file names."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  from matplotlib import pyplot as plt  # pylint: disable=g-import-not-at-top

  task, models = results["task"], results["models"]
  options = tuple(sorted(options_of(task).items()))
  title = (f"{_task_title(task['name'], task.get('num_kv_pairs'), options)}, vocab "
           f"{task['vocab_size']}, d={results['settings']['d_model']}, "
           f"{results['settings']['steps']} steps ({results['device']})")
  written = []

  figure, axes = plt.subplots(figsize=(6.4, 4.4))
  for mixer in MIXER_NAMES:
    records = sorted((r for r in models if r["mixer"] == mixer),
                     key=lambda r: r["state_bytes"])
    if records:
      axes.plot([r["state_bytes"] for r in records], [r["accuracy"] for r in records],
                marker="o", color=MIXER_COLORS[mixer], label=MIXER_NAMES[mixer])
  axes.axhline(results["chance"], color="black", linestyle=":", linewidth=1, label="chance")
  axes.set(xscale="log", xlabel="state of the swept layer per sequence (bytes)",
           ylabel=f"accuracy at {task['seq_len']} tokens", ylim=(0, 1.02))
  axes.set_title(title, fontsize=9)
  axes.legend(fontsize=8)
  figure.tight_layout()
  figure.savefig(os.path.join(output_dir, "accuracy_vs_state.png"), dpi=100)
  plt.close(figure)
  written.append("accuracy_vs_state.png")

  figure, axes = plt.subplots(figsize=(6.4, 4.4))
  for record in models:
    points = record["by_seq_len"]
    axes.plot([p["seq_len"] for p in points], [p["accuracy"] for p in points], marker="o",
              color=MIXER_COLORS[record["mixer"]], label=_label(record),
              alpha=0.4 + 0.6 * _rank_in_mixer(record, models))
  axes.axhline(results["chance"], color="black", linestyle=":", linewidth=1)
  lengths = sorted({p["seq_len"] for r in models for p in r["by_seq_len"]})
  axes.set_xscale("log", base=2)
  axes.set_xticks(lengths, [str(n) for n in lengths])
  axes.minorticks_off()
  axes.set(xlabel="context length (tokens)", ylabel="accuracy", ylim=(0, 1.02))
  axes.set_title(title, fontsize=9)
  axes.legend(fontsize=7, ncol=2)
  figure.tight_layout()
  figure.savefig(os.path.join(output_dir, "accuracy_vs_context.png"), dpi=100)
  plt.close(figure)
  written.append("accuracy_vs_context.png")
  return written


def _rank_in_mixer(record: dict[str, Any], models: list[dict[str, Any]]) -> float:
  """0 for the smallest state of its mixer, 1 for the largest or only one (line opacity)."""
  sizes = sorted({r["state_bytes"] for r in models if r["mixer"] == record["mixer"]})
  return sizes.index(record["state_bytes"]) / (len(sizes) - 1) if len(sizes) > 1 else 1.0


def format_table(results: dict[str, Any]) -> str:
  """One row per model: state, FLOPs, parameters, accuracy by context and by pairs."""
  models = results["models"]
  lengths = [p["seq_len"] for p in models[0]["by_seq_len"]] if models else []
  pairs = [p["num_kv_pairs"] for p in models[0]["by_num_kv_pairs"]] if models else []
  header = (f"{'model':<12} {'state B':>11} {'FLOPs/tok':>10} {'params':>9} {'acc':>6} "
            + " ".join(f"{f'L={n}':>7}" for n in lengths) + " "
            + " ".join(f"{f'kv={n}':>7}" for n in pairs) + f" {'step ms':>8}")
  lines = [f"MQAR {results['task']} on {results['device']}; chance {results['chance']:.3f}",
           header]
  for r in models:
    step_ms = "-" if r["step_ms"] is None else f"{r['step_ms']:.1f}"
    lines.append(f"{r['name']:<12} {r['state_bytes']:>11,} {r['flops_per_token']:>10,.0f} "
                 f"{r['non_memory_parameters'] + r['memory_m0_parameters']:>9,} "
                 f"{r['accuracy']:>6.3f} "
                 + " ".join(f"{p['accuracy']:>7.3f}" for p in r["by_seq_len"]) + " "
                 + " ".join(f"{p['accuracy']:>7.3f}" for p in r["by_num_kv_pairs"])
                 + f" {step_ms:>8}")
  return "\n".join(lines)


def _is_headline(record: dict[str, Any]) -> bool:
  """The record of a run's own task: scored at its training length and pairs."""
  return (record["context"] == record["seq_len"]
          and record.get("eval_num_kv_pairs") == record.get("num_kv_pairs"))


def _panel_key(record: dict[str, Any]) -> tuple:
  # Records written before session 21 carry no task_options (their tasks had defaults).
  options = tuple(sorted((record.get("task_options") or {}).items()))
  return (record["task"], record["seq_len"], record.get("num_kv_pairs") or 0,
          record["vocab_size"], record["d_model"], options)


def _task_title(task: str, pairs: int | None, options: tuple = ()) -> str:
  """What a plot's title calls the recall task: MQAR with its pairs, or the needle task
  with the options that set it apart (its key and query counts)."""
  if task == "mqar":
    return f"MQAR, {pairs} pairs"
  counts = ", ".join(f"{k}={v}" for k, v in options if k.startswith("num_"))
  return f"needle task {task!r}" + (f" ({counts})" if counts else "")


def _panel_title(key: tuple) -> str:
  task, seq_len, pairs, vocab, d_model, options = key
  return (f"{_task_title(task, pairs, options)} in {seq_len} tokens, vocab {vocab}, "
          f"d={d_model}")


_MARKERS = ("o", "s", "^", "D", "v", "P")


def _remedies(record: dict[str, Any]) -> list[str]:
  """The training remedies an SDM run applied (M0's rate, a balance term, the tied init);
  records from before a remedy existed lack its field and did not apply it."""
  if record["mixer"] != "M":
    return []
  applied = []
  if record["m0_lr_multiplier"] != 1.0:
    applied.append(f"M0 lr x{record['m0_lr_multiplier']:g}")
  if record.get("sdm_balance_weight", 0.0):
    applied.append(f"balance {record['sdm_balance_weight']:g}")
  if record.get("sdm_tied_addressing_init", False):
    applied.append("tied init")
  return applied


def _series(record: dict[str, Any]) -> tuple[str, str]:
  """(label, mixer) of the line a record belongs to in the state plot."""
  label = MIXER_NAMES[record["mixer"]]
  if record["mixer"] == "M":
    label = ", ".join([label, f"W=R={record['sdm_writes']}", *_remedies(record)])
  return label, record["mixer"]


def _best_per_state(line: list[dict[str, Any]]) -> list[dict[str, Any]]:
  """One record per state size (one model of a series), in state order: for each learning
  rate the median accuracy over its training seeds, then the rate with the highest. The
  record is that rate's first, with `accuracy` the median and `seed_accuracies` its
  seeds' accuracies."""
  by_rate: dict[tuple, list[dict[str, Any]]] = {}
  for record in line:
    by_rate.setdefault((record["state_bytes"], record.get("peak_lr")), []).append(record)
  best: dict[int, dict[str, Any]] = {}
  for (state, _), runs in by_rate.items():
    accuracies = sorted(r["accuracy"] for r in runs)
    median = statistics.median(accuracies)
    kept = best.get(state)
    if kept is None or median > kept["accuracy"]:
      best[state] = {**runs[0], "accuracy": median, "seed_accuracies": accuracies}
  return [best[state] for state in sorted(best)]


def _context_label(record: dict[str, Any], in_panel: list[dict[str, Any]]) -> str:
  """The run's name, with its rate and seed where others of that name in the panel differ."""
  twins = [r for r in in_panel if r["name"] == record["name"]]
  label = record["name"]
  if len({r.get("peak_lr") for r in twins}) > 1:
    label += f", lr {record.get('peak_lr'):g}"
  if len({r.get("seed") for r in twins}) > 1:
    label += f", seed {record.get('seed')}"
  return label


def _grid(plt, count: int, panel_width: float = 6.4):
  columns = min(count, 2)
  rows = -(-count // columns)
  figure, axes = plt.subplots(rows, columns, figsize=(panel_width * columns, 4.4 * rows),
                              squeeze=False)
  for extra in axes.flat[count:]:
    extra.set_visible(False)
  return figure, list(axes.flat)


def write_record_plots(records: list[dict[str, Any]], results_file: str) -> list[str]:
  """Writes the PNGs of the module docstring next to results_file; returns their names."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  from matplotlib import pyplot as plt  # pylint: disable=g-import-not-at-top

  directory = os.path.dirname(os.path.abspath(results_file))
  stem = os.path.splitext(os.path.basename(results_file))[0]
  written = []
  headline = [r for r in records if _is_headline(r)]
  panels = sorted({_panel_key(r) for r in headline})
  if panels:
    figure, axes = _grid(plt, len(panels), panel_width=9.6)  # the legend sits beside each panel
    for key, ax in zip(panels, axes):
      in_panel = [r for r in headline if _panel_key(r) == key]
      series = sorted({_series(r) for r in in_panel},
                      key=lambda s: (list(MIXER_NAMES).index(s[1]), s[0]))
      for label, mixer in series:
        line = _best_per_state([r for r in in_panel if _series(r) == (label, mixer)])
        # One marker per series of a mixer, so that series of one colour stay apart.
        marker = _MARKERS[[s for s in series if s[1] == mixer].index((label, mixer))
                          % len(_MARKERS)]
        ax.plot([r["state_bytes"] for r in line], [r["accuracy"] for r in line],
                marker=marker, color=MIXER_COLORS[mixer], label=label,
                linestyle="--" if _remedies(line[0]) else "-")
        seeds = [(r["state_bytes"], a) for r in line if len(r["seed_accuracies"]) > 1
                 for a in r["seed_accuracies"]]
        if seeds:  # each seed of a median point, faint
          ax.scatter(*zip(*seeds), s=12, color=MIXER_COLORS[mixer], alpha=0.35)
      ax.axhline(in_panel[0]["chance"], color="black", linestyle=":", linewidth=1,
                 label="chance")
      ax.set(xscale="log", xlabel="state of the swept layer per sequence (bytes)",
             ylabel="accuracy at the training length", ylim=(0, 1.02))
      ax.set_title(_panel_title(key), fontsize=9)
      ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    figure.tight_layout()
    name = f"{stem}_accuracy_vs_state.png"
    figure.savefig(os.path.join(directory, name), dpi=100)
    plt.close(figure)
    written.append(name)

  same_pairs = [r for r in records if r.get("eval_num_kv_pairs") == r.get("num_kv_pairs")]
  runs = {r["run_key"] for r in same_pairs}
  multi = [key for key in runs
           if len({r["context"] for r in same_pairs if r["run_key"] == key}) > 1]
  panels = sorted({_panel_key(r) for r in same_pairs if r["run_key"] in multi})
  if panels:
    figure, axes = _grid(plt, len(panels))
    for key, ax in zip(panels, axes):
      in_panel = [r for r in same_pairs if _panel_key(r) == key and r["run_key"] in multi]
      names = sorted({(r["mixer"], r["state_bytes"], r["name"], r["run_key"])
                      for r in in_panel}, key=lambda t: (list(MIXER_NAMES).index(t[0]),
                                                         t[1], t[2]))
      for mixer, _, name, run in names:
        line = sorted((r for r in in_panel if r["run_key"] == run),
                      key=lambda r: r["context"])
        ax.plot([r["context"] for r in line], [r["accuracy"] for r in line], marker="o",
                color=MIXER_COLORS[mixer], label=_context_label(line[0], in_panel),
                alpha=0.4 + 0.6 * _rank_in_mixer(line[0], in_panel))
      contexts = sorted({r["context"] for r in in_panel})
      ax.axvline(key[1], color="gray", linestyle=":", linewidth=1, label="training length")
      ax.axhline(in_panel[0]["chance"], color="black", linestyle=":", linewidth=1)
      ax.set_xscale("log", base=2)
      ax.set_xticks(contexts, [str(n) for n in contexts])
      ax.minorticks_off()
      ax.set(xlabel="context length (tokens)", ylabel="accuracy", ylim=(0, 1.02))
      ax.set_title(_panel_title(key), fontsize=9)
      ax.legend(fontsize=7, ncol=2)
    figure.tight_layout()
    name = f"{stem}_accuracy_vs_context.png"
    figure.savefig(os.path.join(directory, name), dpi=100)
    plt.close(figure)
    written.append(name)
  return written


def format_record_table(records: list[dict[str, Any]]) -> str:
  """One row per run (its name, with " s<seed>" for training seeds other than 0): its
  learning rate, task, state, mixer FLOPs, accuracy at the training
  length and at the other scored lengths, steps and why training ended, final loss, and for
  SDM the M0 rows training moved and the slots written on held-out sequences. Then, where a
  model was trained with several seeds at a rate, `format_seed_table`."""
  runs: dict[str, list[dict[str, Any]]] = {}
  for record in records:
    runs.setdefault(record["run_key"], []).append(record)
  lines = [f"{'run':<22} {'lr':>6} {'task':<9} {'T':>5} {'pairs':>5} {'state B':>12} "
           f"{'mixFLOPs':>9} {'acc':>6} {'steps':>11} {'stop':<10} {'loss':>7} "
           f"{'M0 rows':>7} {'written':>7}  other lengths (pairs)"]
  for run_records in runs.values():
    head = next((r for r in run_records if _is_headline(r)), run_records[0])
    others = " ".join(
        f"L={r['context']}" + (f"({r['eval_num_kv_pairs']})"
                               if r.get("eval_num_kv_pairs") != r.get("num_kv_pairs") else "")
        + f":{r['accuracy']:.3f}" for r in run_records if r is not head)
    fraction = lambda v: "-" if v is None else f"{v:.3f}"  # noqa: E731
    loss = "-" if head["final_loss"] is None else f"{head['final_loss']:.3f}"
    name = head["name"] + (f" s{head['seed']}" if head.get("seed") else "")
    lines.append(
        f"{name:<22} {head['peak_lr']:>6g} {head['task']:<9} {head['seq_len']:>5} "
        f"{head.get('num_kv_pairs') or '-':>5} {head['state_bytes']:>12,} "
        f"{head['mixer_flops_per_token']:>9,.0f} {head['accuracy']:>6.3f} "
        f"{head['steps']:>5}/{head['step_cap']:<5} {head['stop_reason']:<10} {loss:>7} "
        f"{fraction(head.get('m0_rows_trained_fraction')):>7} "
        f"{fraction(head.get('slots_written_fraction')):>7}  {others}")
  seeds = format_seed_table(records)
  return "\n".join(lines) + (f"\n\n{seeds}" if seeds else "")


def format_seed_table(records: list[dict[str, Any]]) -> str:
  """The noise level: per model and learning rate trained with several seeds, the accuracy
  at the training length of each seed, their median (what the plots draw) and spread (max
  - min). Empty when no model has several seeds."""
  by_model: dict[tuple, dict[int, float]] = {}
  for record in filter(_is_headline, records):
    key = (record["name"], record.get("peak_lr"))
    by_model.setdefault(key, {})[record.get("seed") or 0] = record["accuracy"]
  several = {key: seeds for key, seeds in by_model.items() if len(seeds) > 1}
  if not several:
    return ""
  lines = [f"{'seeds of':<22} {'lr':>6}  {'seed: accuracy':<40} {'median':>6} {'spread':>6}"]
  for (name, lr), seeds in several.items():
    accuracies = sorted(seeds.values())
    median = statistics.median(accuracies)
    each = " ".join(f"{seed}: {seeds[seed]:.3f}" for seed in sorted(seeds))
    lines.append(f"{name:<22} {lr:>6g}  {each:<40} {median:>6.3f} "
                 f"{accuracies[-1] - accuracies[0]:>6.3f}")
  return "\n".join(lines)
