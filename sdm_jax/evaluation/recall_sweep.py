"""The recall sweep behind `experiments.recall_sweep` (importable without defining flags):
what is trained and scored is described there; `run_sweep(settings, output_dir=...)` runs
it from Python (settings: `experiments/configs/recall_sweep.py`'s `get_config(preset)`,
changed as wanted, or its `.to_dict()`)."""

from __future__ import annotations

import os
import tempfile
import time
from typing import Any, Callable

import jax

from sdm_jax.evaluation import recall_plots
from sdm_jax.data.recall_tasks import check_task
from sdm_jax.models import describe
from sdm_jax.models.config import LMConfig
from sdm_jax.training import records
from sdm_jax.training.config import TrainConfig
from sdm_jax.training.recall import (accuracy_by_variant, check_variants,
                                     evaluation_variants, held_out_examples, train_recall)

SWEPT_MIXERS = ("A", "S", "G", "M")
def sweep_points(settings: dict[str, Any]) -> list[dict[str, Any]]:
  """[{"name", "mixer", "knob", "value", "model": LMConfig}] for every mixer and knob value.

  Raises ValueError (naming the setting) for unknown mixers or a knob value its mixer
  cannot take.
  """
  mixers = list(settings["mixers"])
  if not mixers or not set(mixers) <= set(SWEPT_MIXERS) or len(set(mixers)) != len(mixers):
    raise ValueError(f"mixers must be distinct letters of {''.join(SWEPT_MIXERS)}, got "
                     f"{settings['mixers']!r}")
  d = settings["d_model"]
  max_len = max([settings["seq_len"], *settings["eval_seq_lens"]])
  base = dict(vocab_size=settings["vocab_size"], d_model=d, num_layers=2,
              num_heads=settings["num_heads"], window=settings["base_window"],
              max_seq_len=max_len, compute_dtype=settings["compute_dtype"])
  points = []

  def add(mixer, knob, value, **fields):
    name = f"{mixer}_{knob}{value}" if knob else mixer
    try:
      model = LMConfig(**{**base, "pattern": "S" + mixer, **fields})
    except ValueError as error:
      raise ValueError(f"sweep point {name}: {error}") from None
    points.append({"name": name, "mixer": mixer, "knob": knob, "value": value,
                   "model": model})

  for mixer in mixers:
    if mixer == "A":
      add("A", None, None)
    elif mixer == "S":
      for window in settings["windows"]:
        add("S", "window", window, window=window)
    elif mixer == "G":
      for head_dim in settings["gdn_head_dims"]:
        if d % head_dim:
          raise ValueError(f"gdn_head_dims: {head_dim} does not divide d_model {d}")
        add("G", "K", head_dim, gdn_heads=d // head_dim, gdn_head_dim=head_dim)
    elif mixer == "M":
      for slots in settings["sdm_slots"]:
        add("M", "N", slots, sdm_heads=1, sdm_slots=slots, sdm_writes=settings["sdm_writes"],
            sdm_reads=settings["sdm_reads"])
  return points


def _mixer_layer(model: LMConfig) -> str:
  return f"layer_1_{model.layer_kinds[1]}"


def run_point(point: dict[str, Any], settings: dict[str, Any], task: dict[str, Any],
              variants: dict[str, list[dict[str, int]]], *, workdir: str,
              log: Callable[[str], None]) -> dict[str, Any]:
  """Trains one sweep point and scores it (also on every evaluation variant); returns its
  JSON-ready record."""
  model_config = point["model"]
  steps = settings["steps"]
  train_config = TrainConfig(batch_size=settings["batch_size"], seq_len=settings["seq_len"],
                             steps=steps, peak_lr=settings["peak_lr"],
                             warmup_steps=max(1, steps // 10) if steps > 1 else 0,
                             log_every=max(1, steps // 5), checkpoint_every=steps,
                             eval_batch_size=min(64, settings["eval_examples"]))
  held_out = held_out_examples(task, settings["eval_examples"], train_config.seed)
  start = time.perf_counter()
  summary, model, params = train_recall(model_config, train_config, task, workdir, held_out,
                                        log=lambda line: log(f"  {line}"))
  if summary.get("stopped_by"):
    return {"name": point["name"], "stopped_by": summary["stopped_by"]}
  train_s = time.perf_counter() - start
  scoring = dict(num_examples=settings["eval_examples"], seed=train_config.seed,
                 batch_size=train_config.eval_batch_size)
  scored = {"by_seq_len": [], "by_num_kv_pairs": []}
  for key, group in variants.items():
    scored[key] = accuracy_by_variant(model, params, task, group, **scoring)
  state = describe.decode_state_bytes(model_config, settings["seq_len"])
  flops = describe.flops_per_token(model_config, settings["seq_len"])
  parameters = describe.parameter_counts(model_config)
  return {
      "name": point["name"], "mixer": point["mixer"], "knob": point["knob"],
      "value": point["value"], "pattern": model_config.layer_kinds,
      # The swept layer's state per sequence at --seq_len (A: its KV cache there).
      "state_bytes": state[_mixer_layer(model_config)], "model_state_bytes": state["total"],
      "flops_per_token": flops["total"],
      "mixer_flops_per_token": flops[f"mixer_{point['mixer']}"],
      "non_memory_parameters": parameters["non_memory"],
      "memory_m0_parameters": parameters["memory_m0"],
      "accuracy": summary["accuracy"], "final_loss": summary["train_loss"],
      "train_s": train_s,
      "step_ms": summary["step_ms"],
      **scored,
  }


def _write_results(results: dict[str, Any], output_dir: str) -> None:
  with open(os.path.join(output_dir, "results.json"), "w") as f:
    f.write(records.dumps(results, indent=1))


def run_sweep(settings: dict[str, Any], *, output_dir: str, workdir_root: str | None = None,
              log: Callable[[str], None] = print) -> dict[str, Any]:
  """Trains and scores every sweep point; writes results.json and the plots. A signal
  (SIGTERM, SIGINT) stops the sweep after saving the current point's step: results then
  hold "stopped_by" and the points finished before it."""
  # A ConfigDict too; results.json records a plain copy.
  settings = settings.to_dict() if hasattr(settings, "to_dict") else dict(settings)
  task = check_task({"name": "mqar", "seq_len": settings["seq_len"],
                     "vocab_size": settings["vocab_size"],
                     "num_kv_pairs": settings["num_kv_pairs"]})
  # Every point's and every evaluation variant's ValueError before anything trains.
  points = sweep_points(settings)
  variants = evaluation_variants(seq_lens=settings["eval_seq_lens"],
                                 num_kv_pairs=settings["eval_num_kv_pairs"])
  check_variants(task, variants)
  workdir_root = workdir_root or tempfile.mkdtemp(prefix="recall_sweep_")
  os.makedirs(output_dir, exist_ok=True)
  results = {"task": task, "settings": settings, "device": jax.devices()[0].device_kind,
             "chance": 1 / (settings["vocab_size"] - settings["vocab_size"] // 2),
             "models": []}
  sweep_start = time.perf_counter()
  for point in points:
    log(f"== {point['name']} (pattern {point['model'].layer_kinds})")
    record = run_point(point, settings, task, variants,
                       workdir=os.path.join(workdir_root, point["name"]), log=log)
    if record.get("stopped_by"):  # a signal: that point's step is saved; no plots
      results["stopped_by"] = record["stopped_by"]
      log(f"  {point['name']}: {record['stopped_by']}; rerun with "
          f"--workdir_root={workdir_root} to resume")
      _write_results(results, output_dir)
      return results
    results["models"].append(record)
    results["wall_s"] = time.perf_counter() - sweep_start
    log(f"  {point['name']}: accuracy {record['accuracy']:.3f}, state "
        f"{record['state_bytes']:,} B, {record['train_s']:.1f} s")
    _write_results(results, output_dir)
  results["plots"] = recall_plots.write_plots(results, output_dir)
  _write_results(results, output_dir)
  log(recall_plots.format_table(results))
  return results
