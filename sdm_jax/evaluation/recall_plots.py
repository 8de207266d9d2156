"""Plots and the table of a recall sweep's results.json (`recall_sweep`).

  python -m experiments.recall_sweep --replot=experiments/results/recall_sweep/results.json

redraws the PNGs next to the JSON:
  accuracy_vs_state.png: accuracy at the training length against the swept layer's state
    per sequence (bytes, log scale), one line per mixer;
  accuracy_vs_context.png: accuracy against context length (same number of pairs), one
    line per model.
"""

from __future__ import annotations

import os
from typing import Any

MIXER_NAMES = {"A": "full attention (SA)", "S": "sliding window (SS)",
               "G": "Gated DeltaNet (SG)", "M": "Sparse Delta Memory (SM)"}
MIXER_COLORS = {"A": "tab:gray", "S": "tab:blue", "G": "tab:green", "M": "tab:red"}


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
  title = (f"MQAR, {task['num_kv_pairs']} pairs, vocab {task['vocab_size']}, "
           f"d={results['settings']['d_model']}, {results['settings']['steps']} steps "
           f"({results['device']})")
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
  """0 for the smallest state of its mixer, 1 for the largest (line opacity)."""
  sizes = sorted(r["state_bytes"] for r in models if r["mixer"] == record["mixer"])
  return sizes.index(record["state_bytes"]) / max(len(sizes) - 1, 1)


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
