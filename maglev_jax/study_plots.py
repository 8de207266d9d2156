"""Plots and the table of a Maglev study file (`maglev_jax.study`: a JSON list of records).

  python -m experiments.maglev_study --replot=experiments/results/maglev_study_h200.json

redraws the PNGs next to the JSON (<stem> = its name without .json):
  <stem>_lambda.png: validation BPB against lambda, one panel per sharing; recurrent
    (solid) and teacher-forced (dashed) for the plain settings, markers for the
    stop-gradient / prefiller-CE variants, SWA as a horizontal line; at the study's base
    tokens (the fewest), means over seeds with their standard deviation as error bars;
  <stem>_by_position.png: BPB per position bucket (one window wide) of every setting,
    recurrent and teacher-forced panels, SWA in black in both.
"""

from __future__ import annotations

import collections
import math
import os
from typing import Any, Sequence

from maglev_jax.config import SHARING

PLOT_SUFFIXES = ("_lambda.png", "_by_position.png")
# Settings above this multiple of SWA's BPB are drawn at the top edge of the lambda plot.
OUTLIER_RATIO = 1.5
# (stop_gradient_target, prefiller CE on) -> marker of the variant's points.
_VARIANT_MARKERS = {(True, False): "^", (False, True): "D", (True, True): "P"}


def mean_and_spread(values: Sequence[float | None]) -> tuple[float | None, float | None]:
  """(mean, sample standard deviation) of the values that are not None; the spread is None
  for fewer than two values, both are None for none."""
  values = [v for v in values if v is not None]
  if not values:
    return None, None
  mean = sum(values) / len(values)
  if len(values) < 2:
    return mean, None
  return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def grouped(study_records: list[dict[str, Any]]) -> dict[tuple[str, int], list[dict]]:
  """{(setting, tokens): its records (one per seed)}, in the file's order."""
  groups: dict[tuple[str, int], list[dict]] = collections.defaultdict(list)
  for record in study_records:
    groups[(record["setting"], record["tokens"])].append(record)
  return dict(groups)


def _base_tokens(study_records: list[dict[str, Any]]) -> int:
  return min(record["tokens"] for record in study_records)


def _label(setting: str, tokens: int, base_tokens: int) -> str:
  return setting if tokens == base_tokens else f"{setting} ({tokens / base_tokens:g}x tokens)"


def _title(study_records: list[dict[str, Any]], tokens: int | None = None) -> str:
  configs = ", ".join(sorted({r["config"] for r in study_records}))
  devices = ", ".join(sorted({r["device"] for r in study_records}))
  first = study_records[0]
  at = f", {tokens:,} tokens" if tokens is not None else ""
  return (f"{configs}: d={first['d_model']}, {first['num_layers']} layers, window "
          f"{first['window']}, seq {first['seq_len']}{at} ({devices})")


def write_plots(study_records: list[dict[str, Any]], out: str) -> list[str]:
  """Writes the PNGs of the module docstring next to `out`; returns their file names."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  from matplotlib import pyplot as plt  # pylint: disable=g-import-not-at-top

  if not study_records:
    raise ValueError(f"{out} holds no records to plot")
  directory = os.path.dirname(os.path.abspath(out))
  stem = os.path.splitext(os.path.basename(out))[0]
  base = _base_tokens(study_records)
  at_base = [r for r in study_records if r["tokens"] == base]
  swa_mean, swa_spread = mean_and_spread([r["val_bpb"] for r in at_base if r["model"] == "swa"])
  written = []

  sharings = [s for s in SHARING if any(r["sharing"] == s for r in at_base)] or ["separate"]
  figure, panels = plt.subplots(1, len(sharings), figsize=(5.2 * len(sharings), 4.4),
                                squeeze=False, sharey=True)
  plotted: list[tuple[Any, float, float, str | None]] = []  # (axes, lambda, BPB, None)
  for axes, sharing in zip(panels[0], sharings):
    variants: dict[tuple[bool, bool], dict[float, list[dict]]] = collections.defaultdict(
        lambda: collections.defaultdict(list))
    for record in at_base:
      if record["sharing"] == sharing:
        variant = (bool(record["stop_gradient_target"]), bool(record["prefiller_ce_weight"]))
        variants[variant][record["lambda"]].append(record)
    lambdas = sorted({lam for by_lambda in variants.values() for lam in by_lambda})
    for variant, by_lambda in sorted(variants.items()):
      xs = sorted(by_lambda)
      names = sorted({r["setting"] for lam in xs for r in by_lambda[lam]})
      plain = variant == (False, False)
      for field, style, source in (("bpb_recurrent", "-", "recurrent"),
                                   ("bpb_teacher_forced", "--", "teacher-forced")):
        stats = [mean_and_spread([r[field] for r in by_lambda[lam]]) for lam in xs]
        plotted += [(axes, lam, m, None) for lam, (m, _) in zip(xs, stats) if m is not None]
        label = f"{source}" if plain else f"{'/'.join(names)}: {source}"
        axes.errorbar(xs, [m for m, _ in stats], yerr=[s or 0.0 for _, s in stats],
                      linestyle=style if plain else "none",
                      marker="o" if plain else _VARIANT_MARKERS[variant],
                      color="tab:blue" if source == "recurrent" else "tab:orange",
                      markerfacecolor="none" if source == "teacher-forced" else None,
                      capsize=3, label=label)
    if swa_mean is not None:
      axes.axhline(swa_mean, color="black", linewidth=1.2, label="SWA (same decoder)")
      if swa_spread:
        axes.axhspan(swa_mean - swa_spread, swa_mean + swa_spread, color="black", alpha=0.1)
    axes.set_xscale("symlog", linthresh=0.1)
    if lambdas:
      axes.set_xticks(lambdas, [f"{lam:g}" for lam in lambdas])
    axes.minorticks_off()
    axes.set(xlabel="lambda (memory loss weight)", title=f"{sharing}")
    axes.legend(fontsize=7)
  panels[0][0].set_ylabel("validation BPB")
  _clip_outliers(plotted, swa_mean)
  figure.suptitle(_title(study_records, base), fontsize=9)
  figure.tight_layout()
  written.append(stem + PLOT_SUFFIXES[0])
  figure.savefig(os.path.join(directory, written[-1]), dpi=100)
  plt.close(figure)

  figure, panels = plt.subplots(1, 2, figsize=(11, 4.6), sharey=True)
  colors = plt.get_cmap("tab20").colors
  buckets = study_records[0]["bpb_by_position"]
  ticks = list(range(len(buckets)))
  maglev_index = 0
  plotted = []  # (axes, bucket, BPB, label)
  for (setting, tokens), group in grouped(study_records).items():
    label = _label(setting, tokens, base)
    if setting == "swa":
      color, width = "black", 2.0
    else:
      color, width = colors[maglev_index % len(colors)], 1.2
      maglev_index += 1
    for axes, field in zip(panels, ("bpb_recurrent", "bpb_teacher_forced")):
      if setting == "swa":
        field = "val_bpb"
      means = [mean_and_spread([r["bpb_by_position"][i][field] for r in group])[0]
               for i in ticks]
      axes.plot(ticks, means, marker="o", color=color, linewidth=width,
                linestyle="-" if tokens == base else ":", label=label)
      plotted += [(axes, i, m, label) for i, m in zip(ticks, means) if m is not None]
  for axes, title in zip(panels, ("recurrent (P on its own memories)",
                                  "teacher-forced (P on Q's memories)")):
    axes.set_xticks(ticks, [f"{b['start']}-{b['end']}" for b in buckets], fontsize=8)
    axes.set(xlabel="positions in the sequence (buckets one attention window wide)",
            title=title)
  panels[0].set_ylabel("validation BPB")
  _clip_outliers(plotted, swa_mean)
  panels[1].legend(fontsize=7, ncol=2)
  figure.suptitle(_title(study_records), fontsize=9)
  figure.tight_layout()
  written.append(stem + PLOT_SUFFIXES[1])
  figure.savefig(os.path.join(directory, written[-1]), dpi=100)
  plt.close(figure)
  return written


def _clip_outliers(points: list[tuple[Any, float, float, str | None]],
                   swa_bpb: float | None) -> None:
  """Keeps the y-range on the settings near SWA when a few are far off (a lambda-0
  separate stack can sit at 3 BPB against SWA's 0.7): the y-axis (shared by the panels)
  stops above the highest point (axes, x, BPB, line label) within OUTLIER_RATIO of SWA,
  and what lies beyond is written at the top edge: each point's value, or for a labelled
  line its label and range once, at its first point off scale."""
  if not points or swa_bpb is None:
    return
  near = [bpb for _, _, bpb, _ in points if bpb <= OUTLIER_RATIO * swa_bpb]
  if len(near) == len(points) or not near:
    return
  low, high = min(near + [swa_bpb]), max(near + [swa_bpb])
  top = high + 0.15 * (high - low) + 1e-3
  points[0][0].set_ylim(low - 0.05 * (high - low) - 1e-3, top)
  lines: dict[tuple[Any, str], list[tuple[float, float]]] = collections.defaultdict(list)
  for axes, x, bpb, label in points:
    if bpb <= top:
      continue
    if label is None:
      _note_at_top(axes, x, top, f"{bpb:.2f}")
    else:
      lines[(axes, label)].append((x, bpb))
  for (axes, label), off_scale in lines.items():  # a line named once, at its first point
    values = [bpb for _, bpb in off_scale]
    span = (f"{min(values):.2f}-{max(values):.2f}" if len(values) > 1 else f"{values[0]:.2f}")
    _note_at_top(axes, off_scale[0][0], top, f"{label}: {span}")


def _note_at_top(axes, x: float, top: float, text: str) -> None:
  axes.annotate(f"{text} (off scale)", (x, top), xytext=(0, -12), textcoords="offset points",
                ha="left" if x == 0 else "center", fontsize=7,
                arrowprops=dict(arrowstyle="->", linewidth=0.8))


def _number(value: float | None, digits: int = 4) -> str:
  return "-" if value is None else f"{value:.{digits}f}"


def format_table(study_records: list[dict[str, Any]]) -> str:
  """One row per record (recurrent = val_bpb for SWA), then per token budget the SWA mean
  and the best Maglev setting by recurrent BPB (means over seeds, with their spread)."""
  if not study_records:
    return "no records"
  buckets = study_records[0]["bpb_by_position"]
  bucket_heads = " ".join(f"{'%d-%d' % (b['start'], b['end']):>10}" for b in buckets)
  lines = [_title(study_records),
           "recurrent = val BPB (SWA: its BPB); gap = recurrent - teacher-forced; then the "
           "recurrent BPB by position bucket",
           f"{'setting':<26} {'seed':>4} {'tokens':>11} {'recurrent':>9} {'teacher':>8} "
           f"{'gap':>7} {'mem=0':>7} {bucket_heads} {'step_ms':>8} {'train_s':>8}"]
  for r in study_records:
    by_position = " ".join(f"{_number(b['val_bpb']):>10}" for b in r["bpb_by_position"])
    lines.append(f"{r['setting']:<26} {r['seed']:>4} {r['tokens']:>11,} "
                 f"{_number(r['val_bpb']):>9} {_number(r['bpb_teacher_forced']):>8} "
                 f"{_number(r['recurrent_minus_teacher_forced'], 3):>7} "
                 f"{_number(r['bpb_memory_zeroed'], 3):>7} {by_position} "
                 f"{_number(r['step_ms'], 1):>8} {_number(r['train_s'], 1):>8}")
  groups = grouped(study_records)
  for tokens in sorted({r["tokens"] for r in study_records}):
    stats = {setting: (mean_and_spread([r["val_bpb"] for r in group]), len(group))
             for (setting, at), group in groups.items() if at == tokens}
    swa = stats.pop("swa", None)
    text = f"at {tokens:,} tokens: "
    text += ("SWA " + _with_spread(*swa) if swa else "no SWA run")
    if stats:
      best = min(stats, key=lambda s: stats[s][0][0])
      text += f"; best Maglev (recurrent) {best} " + _with_spread(*stats[best])
      if swa:
        text += f", {stats[best][0][0] - swa[0][0]:+.4f} vs SWA"
        text += _paired_by_seed(groups[(best, tokens)], groups[("swa", tokens)])
    lines.append(text)
  return "\n".join(lines)


def _paired_by_seed(runs: list[dict[str, Any]], swa_runs: list[dict[str, Any]]) -> str:
  """The best setting against SWA on the seeds both ran: the mean and spread of the
  seed-by-seed differences and how many are below SWA; empty for fewer than two."""
  swa_by_seed = {r["seed"]: r["val_bpb"] for r in swa_runs}
  differences = [r["val_bpb"] - swa_by_seed[r["seed"]] for r in runs
                 if r["seed"] in swa_by_seed]
  if len(differences) < 2:
    return ""
  mean, spread = mean_and_spread(differences)
  below = sum(d < 0 for d in differences)
  return (f"; paired by seed {mean:+.4f} +- {spread:.4f}, below SWA in {below} of "
          f"{len(differences)} seeds")


def _with_spread(stat: tuple[float | None, float | None], count: int) -> str:
  mean, spread = stat
  return (f"{_number(mean)}" + ("" if spread is None else f" +- {spread:.4f}")
          + f" ({count} seed{'s' if count > 1 else ''})")
