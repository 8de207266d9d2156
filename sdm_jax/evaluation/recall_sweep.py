"""The recall sweep behind `experiments.recall_sweep` (importable without defining flags):
what is trained and scored is described there; `run_sweep(settings, output_dir=...)` or
`run_sweep(settings, results_file=...)` runs it from Python (settings:
`experiments/configs/recall_sweep.py`'s `get_config(preset)`, changed as wanted, or its
`.to_dict()`; fields missing from it take `SETTING_DEFAULTS`).

Two ways to keep results:
- `output_dir`: results.json there, {"task", "settings", "device", "chance", "models": [one
  run record per model]}, rewritten after every model, and the plots.
- `results_file`: a JSON list of measurement records (`measurement_records`: one per run and
  scored variant, with `context`, the scored length) that each run appends to. A run whose
  `run_key` (its name and a digest of its task, model, training, stop rule and scoring) is
  in the file already is skipped, so a cut sweep, run again, trains only what is missing;
  the plots (`recall_plots.write_record_plots`) go next to the file.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import math
import os
import tempfile
import time
from typing import Any, Callable

import jax

from sdm_jax.data.mqar import recall_positions
from sdm_jax.data.recall_tasks import chance_accuracy, check_task
from sdm_jax.evaluation import recall_plots
from sdm_jax.evaluation.slot_usage import read_write_overlap, trained_m0_rows, written_slots
from sdm_jax.models import describe
from sdm_jax.models.config import LMConfig
from sdm_jax.models.lm import LM, init_function
from sdm_jax.models.isoflop import sdm_matching_gdn
from sdm_jax.training import records
from sdm_jax.training.config import TrainConfig
from sdm_jax.training.plateau import PlateauRule
from sdm_jax.training.recall import (accuracy_by_variant, check_variants,
                                     evaluation_variants, held_out_examples, train_recall)

SWEPT_MIXERS = ("A", "S", "G", "M")

# Settings every preset must give.
REQUIRED_SETTINGS = ("mixers", "d_model", "num_heads", "base_window", "windows",
                     "gdn_head_dims", "sdm_slots", "sdm_writes", "sdm_reads", "seq_len",
                     "num_kv_pairs", "vocab_size", "steps", "batch_size", "peak_lrs",
                     "compute_dtype", "eval_seq_lens", "eval_num_kv_pairs", "eval_examples")
# Settings a preset may leave out; these defaults keep the original sweep (MQAR, no M0
# multiplier, no isoFLOP twins, five log lines, no stop rule).
SETTING_DEFAULTS = {
    # The recall task (`sdm_jax.data.recall_tasks`) and its options besides seq_len,
    # vocab_size and, for mqar only, num_kv_pairs.
    "task": "mqar", "task_options": {},
    # Also train the SDM mixer `sdm_matching_gdn` gives for each of gdn_head_dims (W = R =
    # K, S at equal mixer FLOPs), whether G is among the mixers or not.
    "sdm_match_gdn": False,
    # More M points at their own W and R, as (N, W, R) triples, named M_N<N>_W<W>, with M
    # among the mixers (the N points of sdm_slots use sdm_writes and sdm_reads).
    "sdm_extra_points": (),
    # Each M point once per value (TrainConfig.m0_lr_multiplier).
    "m0_lr_multipliers": (1.0,),
    # Every M point's LMConfig.sdm_balance_weight (the addressing balance in the loss; its
    # name gets "_bal<weight>" when not 0).
    "sdm_balance_weight": 0.0,
    # Every M point's LMConfig.sdm_tied_addressing_init (the read projection starts as a
    # copy of the write projection; its name gets "_tied" when True).
    "sdm_tied_addressing_init": False,
    # Every point once per training seed (TrainConfig.seed: initialisation and batches);
    # held-out examples come from EVAL_SEED whatever the training seed.
    "seeds": (0,),
    # Steps between logged losses (None: steps // 5).
    "log_every": None,
    # `PlateauRule` (plateau_window 0: no rule, every run trains to `steps`).
    "plateau_window": 0, "plateau_min_improvement": 0.01, "plateau_min_steps": 0,
    "plateau_loss_floor": 0.0,
    # A plateau above this fraction of the chance loss -ln(chance_accuracy) is a pause, not
    # the end (`PlateauRule.pause_above`; 0: off).
    "plateau_pause_fraction": 0.0,
}
STEP_CAP = "step_cap"
# The seed of the held-out examples and of scoring, the same for every run so that runs of
# several training seeds are scored on the same examples (seed 0's runs are unchanged).
EVAL_SEED = 0


def complete_settings(settings: Any) -> dict[str, Any]:
  """A plain dict of the settings (a ConfigDict too) with SETTING_DEFAULTS filled in;
  ValueError naming missing or unknown settings."""
  settings = settings.to_dict() if hasattr(settings, "to_dict") else dict(settings)
  missing = [name for name in REQUIRED_SETTINGS if name not in settings]
  unknown = sorted(set(settings) - set(REQUIRED_SETTINGS) - set(SETTING_DEFAULTS))
  if missing or unknown:
    raise ValueError(f"recall sweep settings: missing {missing}, unknown {unknown}; the "
                     f"settings are {sorted(REQUIRED_SETTINGS + tuple(SETTING_DEFAULTS))}")
  return {**SETTING_DEFAULTS, **settings}


def sweep_task(settings: dict[str, Any]) -> dict[str, Any]:
  """The task spec of the settings (`check_task`d)."""
  task = {"name": settings["task"], "seq_len": settings["seq_len"],
          "vocab_size": settings["vocab_size"]}
  if settings["task"] == "mqar":
    task["num_kv_pairs"] = settings["num_kv_pairs"]
  elif settings["num_kv_pairs"] is not None:
    raise ValueError(f"num_kv_pairs is an mqar setting; task {settings['task']!r} needs "
                     f"num_kv_pairs=None (its options go in task_options)")
  return check_task({**task, **dict(settings["task_options"])})


def plateau_rule(settings: dict[str, Any]) -> PlateauRule | None:
  """The settings' stop rule, None when plateau_window is 0."""
  if not settings["plateau_window"]:
    return None
  fraction = settings["plateau_pause_fraction"]
  if not (isinstance(fraction, (int, float)) and 0 <= fraction < 1):
    raise ValueError(f"plateau_pause_fraction must be in [0, 1), got {fraction!r}")
  chance_loss = -math.log(chance_accuracy(sweep_task(settings)))
  return PlateauRule(window=settings["plateau_window"],
                     min_improvement=settings["plateau_min_improvement"],
                     min_steps=settings["plateau_min_steps"],
                     loss_floor=settings["plateau_loss_floor"],
                     pause_above=fraction * chance_loss)


def sweep_points(settings: dict[str, Any]) -> list[dict[str, Any]]:
  """[{"name", "mixer", "knob", "value", "model": LMConfig, "m0_lr_multiplier",
  "isoflop_gdn_head_dim", "peak_lr", "seed"}] for every mixer and knob value (M: also per
  M0 multiplier and for the isoFLOP twins; a twin equal to an N point is that point,
  marked), each once per learning rate of peak_lrs (Zoology-style: a model's figure is its
  best learning rate; the name stays the model's, the record carries peak_lr) and per
  training seed of seeds (the record carries seed).

  Raises ValueError (naming the setting) for unknown mixers or a knob value its mixer
  cannot take.
  """
  settings = complete_settings(settings)
  mixers = list(settings["mixers"])
  if not mixers or not set(mixers) <= set(SWEPT_MIXERS) or len(set(mixers)) != len(mixers):
    raise ValueError(f"mixers must be distinct letters of {''.join(SWEPT_MIXERS)}, got "
                     f"{settings['mixers']!r}")
  multipliers = _distinct_numbers(settings, "m0_lr_multipliers")
  learning_rates = _distinct_numbers(settings, "peak_lrs", nonnegative=True)
  seeds = _distinct_numbers(settings, "seeds", nonnegative=True, integer=True)
  d = settings["d_model"]
  max_len = max([settings["seq_len"], *settings["eval_seq_lens"]])
  base = dict(vocab_size=settings["vocab_size"], d_model=d, num_layers=2,
              num_heads=settings["num_heads"], window=settings["base_window"],
              max_seq_len=max_len, compute_dtype=settings["compute_dtype"])
  points = []

  def model_of(name, mixer, **fields):
    try:
      return LMConfig(**{**base, "pattern": "S" + mixer, **fields})
    except ValueError as error:
      raise ValueError(f"sweep point {name}: {error}") from None

  def add(mixer, knob, value, name, multiplier=1.0, isoflop=None, **fields):
    points.append({"name": name, "mixer": mixer, "knob": knob, "value": value,
                   "model": model_of(name, mixer, **fields), "m0_lr_multiplier": multiplier,
                   "isoflop_gdn_head_dim": isoflop})

  def gdn_fields(head_dim):
    if d % head_dim:
      raise ValueError(f"gdn_head_dims: {head_dim} does not divide d_model {d}")
    return dict(gdn_heads=d // head_dim, gdn_head_dim=head_dim)

  def add_sdm(slots, writes, reads, isoflop=None):
    for multiplier in multipliers:
      name = f"M_N{slots}" + (f"_W{writes}" if writes != settings["sdm_writes"] else "")
      name += f"_m0lr{multiplier:g}" if multiplier != 1.0 else ""
      balance = settings["sdm_balance_weight"]
      name += f"_bal{balance:g}" if balance else ""
      tied = settings["sdm_tied_addressing_init"]
      name += "_tied" if tied else ""
      fields = dict(sdm_heads=1, sdm_slots=slots, sdm_writes=writes, sdm_reads=reads,
                    sdm_balance_weight=balance, sdm_tied_addressing_init=tied)
      same = [p for p in points if p["mixer"] == "M" and p["m0_lr_multiplier"] == multiplier
              and p["model"] == model_of(name, "M", **fields)]
      if same:  # the twin is an N point already
        same[0]["isoflop_gdn_head_dim"] = isoflop
      else:
        add("M", "N", slots, name, multiplier, isoflop, **fields)

  for mixer in mixers:
    if mixer == "A":
      add("A", None, None, "A")
    elif mixer == "S":
      for window in settings["windows"]:
        add("S", "window", window, f"S_window{window}", window=window)
    elif mixer == "G":
      for head_dim in settings["gdn_head_dims"]:
        add("G", "K", head_dim, f"G_K{head_dim}", **gdn_fields(head_dim))
    elif mixer == "M":
      for slots in settings["sdm_slots"]:
        add_sdm(slots, settings["sdm_writes"], settings["sdm_reads"])
      for extra in settings["sdm_extra_points"]:
        if len(extra) != 3:
          raise ValueError(f"sdm_extra_points must hold (N, W, R) triples, got {extra!r}")
        add_sdm(*(int(x) for x in extra))
  if settings["sdm_match_gdn"]:
    for head_dim in settings["gdn_head_dims"]:
      fields, _ = sdm_matching_gdn(model_of(f"G_K{head_dim}", "G", **gdn_fields(head_dim)))
      add_sdm(fields["sdm_slots"], fields["sdm_writes"], fields["sdm_reads"], head_dim)
  return [{**point, "peak_lr": lr, "seed": seed}
          for point in points for lr in learning_rates for seed in seeds]


def init_overlaps(settings: Any, *, examples: int = 64, batch_size: int = 16
                  ) -> list[dict[str, Any]]:
  """Before any training: for each M point of MQAR settings, the slots its reads at the
  query positions share with its writes at the positions of the queried keys' values
  (`slot_usage.read_write_overlap`, at the initial parameters of each training seed), on
  `examples` held-out examples. That overlap is the only path by which a recall can run
  through the memory, so it is the signal that first trains the addressing.

  Returns [{"name", "sdm_slots", "sdm_writes", "sdm_reads", "seed", "overlap_slots",
  "chance_slots"}] in point order (one per M point and seed; learning rates do not change
  the initial parameters)."""
  settings = complete_settings(settings)
  task = sweep_task(settings)
  if task["name"] != "mqar":
    raise ValueError(f"init_overlaps needs an mqar task, got {task['name']!r}")
  held_out = held_out_examples(task, examples, EVAL_SEED)
  queries, values = recall_positions(held_out["inputs"], held_out["targets"],
                                     task["num_kv_pairs"])
  results, seen = [], set()
  for point in sweep_points(settings):
    if point["mixer"] != "M" or (point["name"], point["seed"]) in seen:
      continue
    seen.add((point["name"], point["seed"]))
    model = LM(point["model"])
    params = init_function(model, settings["seq_len"])(jax.random.PRNGKey(point["seed"]))
    (overlap,) = read_write_overlap(model, params, held_out["inputs"], queries, values,
                                    batch_size=batch_size).values()
    config = point["model"]
    results.append({"name": point["name"], "sdm_slots": config.sdm_slots,
                    "sdm_writes": config.sdm_writes, "sdm_reads": config.sdm_reads,
                    "seed": point["seed"], **overlap})
  return results


def _distinct_numbers(settings: dict[str, Any], name: str, *, nonnegative: bool = False,
                      integer: bool = False) -> list[float] | list[int]:
  """settings[name] as floats (3 and 3.0: one run, one run key), or as ints with integer;
  ValueError unless it is a non-empty list of distinct numbers (ints with integer; >= 0
  with nonnegative)."""
  values = list(settings[name])
  kinds = (int,) if integer else (int, float)
  if (not values or len(set(values)) != len(values)
      or not all(isinstance(v, kinds) and not isinstance(v, bool)
                 and (v >= 0 or not nonnegative) for v in values)):
    raise ValueError(f"{name} must be distinct {'ints' if integer else 'numbers'}"
                     f"{' >= 0' if nonnegative else ''}, got {values!r}")
  return values if integer else [float(v) for v in values]


def train_config_of(settings: dict[str, Any], point: dict[str, Any]) -> TrainConfig:
  """The training settings of one point."""
  steps = settings["steps"]
  log_every = settings["log_every"] or max(1, steps // 5)
  return TrainConfig(batch_size=settings["batch_size"], seq_len=settings["seq_len"],
                     steps=steps, peak_lr=point["peak_lr"],
                     warmup_steps=max(1, steps // 10) if steps > 1 else 0,
                     log_every=log_every, checkpoint_every=steps,
                     eval_batch_size=min(64, settings["eval_examples"]),
                     m0_lr_multiplier=point["m0_lr_multiplier"], seed=point["seed"])


# LMConfig fields added after runs were recorded, and their defaults: at the default they
# are left out of the digest, so the runs recorded before keep their keys (and are skipped).
_FIELDS_ADDED_LATER = {"sdm_balance_weight": 0.0, "sdm_tied_addressing_init": False}


def run_key(point: dict[str, Any], task: dict[str, Any], train_config: TrainConfig,
            rule: PlateauRule | None, settings: dict[str, Any]) -> str:
  """"<name>-<digest>": the digest covers everything that shapes the run's results (task,
  model, training, stop rule, what is scored), so equal keys mean the same run."""
  model = {name: value for name, value in point["model"].to_dict().items()
           if _FIELDS_ADDED_LATER.get(name, object()) != value}
  spec = {"task": task, "model": model,
          "train": dataclasses.asdict(train_config),
          "stop_rule": None if rule is None else dataclasses.asdict(rule),
          "scoring": {key: settings[key] for key in ("eval_examples", "eval_seq_lens",
                                                     "eval_num_kv_pairs")}}
  digest = hashlib.sha256(records.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]
  return f"{point['name']}-{digest}"


def _mixer_layer(model: LMConfig) -> str:
  return f"layer_1_{model.layer_kinds[1]}"


def run_point(point: dict[str, Any], settings: dict[str, Any], task: dict[str, Any],
              variants: dict[str, list[dict[str, int]]], *, workdir: str,
              log: Callable[[str], None], key: str | None = None) -> dict[str, Any]:
  """Trains one sweep point (until the stop rule or the step cap) and scores it, also on
  every evaluation variant; returns its JSON-ready run record."""
  settings = complete_settings(settings)
  model_config = point["model"]
  train_config = train_config_of(settings, point)
  rule = plateau_rule(settings)
  held_out = held_out_examples(task, settings["eval_examples"], EVAL_SEED)
  start = time.perf_counter()
  summary, model, params = train_recall(model_config, train_config, task, workdir, held_out,
                                        log=lambda line: log(f"  {line}"), stop_rule=rule)
  if summary.get("stopped_by"):
    return {"name": point["name"], "stopped_by": summary["stopped_by"]}
  train_s = time.perf_counter() - start
  scoring = dict(num_examples=settings["eval_examples"], seed=EVAL_SEED,
                 batch_size=train_config.eval_batch_size)
  scored = {"by_seq_len": [], "by_num_kv_pairs": []}
  for group, group_variants in variants.items():
    scored[group] = accuracy_by_variant(model, params, task, group_variants, **scoring)
  state = describe.decode_state_bytes(model_config, settings["seq_len"])
  flops = describe.flops_per_token(model_config, settings["seq_len"])
  parameters = describe.parameter_counts(model_config)
  steps = summary["step"]
  stopped_by_rule = summary["stopped_by_rule"]
  final_loss = summary["train_loss"]
  if final_loss is None or final_loss != final_loss:  # resumed with nothing left to train
    logged = [r["loss"] for r in records.read_metrics(workdir) if r.get("loss") is not None]
    final_loss = logged[-1] if logged else None
  record = {
      "name": point["name"], "run_key": key, "mixer": point["mixer"], "knob": point["knob"],
      "value": point["value"], "pattern": model_config.layer_kinds,
      "task": task["name"], "seq_len": task["seq_len"],
      "num_kv_pairs": task.get("num_kv_pairs"), "vocab_size": task["vocab_size"],
      "task_options": recall_plots.options_of(task),
      "d_model": model_config.d_model,
      # The swept layer's state per sequence at seq_len (A: its KV cache there).
      "state_bytes": state[_mixer_layer(model_config)], "model_state_bytes": state["total"],
      "flops_per_token": flops["total"],
      "mixer_flops_per_token": flops[f"mixer_{point['mixer']}"],
      "non_memory_parameters": parameters["non_memory"],
      "memory_m0_parameters": parameters["memory_m0"],
      "accuracy": summary["accuracy"], "n": summary["n"], "positions": summary["positions"],
      "chance": chance_accuracy(task), "final_loss": final_loss,
      # Steps trained, the cap, why training ended, and whether the stop rule held there
      # (a plateau or a loss below the floor; None: no rule).
      "steps": steps, "step_cap": train_config.steps,
      "stop_reason": stopped_by_rule if stopped_by_rule and steps < train_config.steps
      else STEP_CAP,
      "plateaued": None if rule is None else stopped_by_rule is not None,
      "peak_lr": train_config.peak_lr, "seed": train_config.seed,
      "batch_size": train_config.batch_size,
      "m0_lr_multiplier": point["m0_lr_multiplier"],
      "train_s": train_s,
      "step_ms": summary["step_ms"],
      "device": jax.devices()[0].device_kind,
      # SDM's (None for the other mixers): its table and, when an isoFLOP twin, the GDN
      # head dim it matches; the slots the trained model writes on the held-out examples,
      # all together and per sequence, and the M0 rows training moved (= the slots
      # addressed at least once in training; `slot_usage`).
      "sdm_slots": None, "sdm_writes": None, "sdm_reads": None, "sdm_balance_weight": None,
      "sdm_tied_addressing_init": None,
      "isoflop_gdn_head_dim": None, "slots_written_fraction": None,
      "slots_written_per_sequence_fraction": None, "m0_rows_trained_fraction": None,
      **scored,
  }
  if point["mixer"] == "M":
    layer = _mixer_layer(model_config)
    usage = written_slots(model, params, held_out["inputs"],
                          batch_size=train_config.eval_batch_size)[layer]
    initial = init_function(model, task["seq_len"])(jax.random.PRNGKey(train_config.seed))
    record.update({
        "sdm_slots": model_config.sdm_slots, "sdm_writes": model_config.sdm_writes,
        "sdm_reads": model_config.sdm_reads,
        "sdm_balance_weight": model_config.sdm_balance_weight,
        "sdm_tied_addressing_init": model_config.sdm_tied_addressing_init,
        "isoflop_gdn_head_dim": point["isoflop_gdn_head_dim"],
        "slots_written_fraction": usage["written_fraction"],
        "slots_written_per_sequence_fraction": usage["written_per_sequence_fraction"],
        "m0_rows_trained_fraction": trained_m0_rows(
            jax.device_get(initial), jax.device_get(params)).get(layer),
    })
  return record


def measurement_records(run: dict[str, Any]) -> list[dict[str, Any]]:
  """A run record as one record per scored variant: the run's fields (without the
  by_seq_len / by_num_kv_pairs lists) plus `context` (the scored length), `eval_num_kv_pairs`
  (mqar: the scored pairs, else None), `accuracy`, `n`, `positions`. The first is the
  training task (context = seq_len); a variant equal to it is not repeated."""
  base = {k: v for k, v in run.items() if k not in ("by_seq_len", "by_num_kv_pairs")}
  result, seen = [], set()

  def add(context, pairs, scored):
    if (context, pairs) not in seen:
      seen.add((context, pairs))
      result.append({**base, "context": context, "eval_num_kv_pairs": pairs,
                     "accuracy": scored["accuracy"], "n": scored["n"],
                     "positions": scored["positions"]})

  add(run["seq_len"], run["num_kv_pairs"], run)
  for scored in run["by_seq_len"]:
    add(scored["seq_len"], run["num_kv_pairs"], scored)
  for scored in run["by_num_kv_pairs"]:
    add(run["seq_len"], scored["num_kv_pairs"], scored)
  return result


def load_records(path: str) -> list[dict[str, Any]]:
  """The records of a results file ([] when it does not exist); ValueError unless it holds
  a JSON list of records."""
  return records.read_record_list(path, "a recall results file")


def _prepare(settings: Any):
  """(settings, task, points, variants), every ValueError before anything trains."""
  settings = complete_settings(settings)
  task = sweep_task(settings)
  points = sweep_points(settings)
  variants = evaluation_variants(seq_lens=settings["eval_seq_lens"],
                                 num_kv_pairs=settings["eval_num_kv_pairs"])
  check_variants(task, variants)
  plateau_rule(settings)
  for point in points:
    train_config_of(settings, point)
  return settings, task, points, variants


def run_sweep(settings: Any, *, output_dir: str | None = None,
              results_file: str | None = None, workdir_root: str | None = None,
              log: Callable[[str], None] = print) -> dict[str, Any]:
  """Trains and scores every sweep point; keeps results as the module docstring says (give
  output_dir or results_file). A signal (SIGTERM, SIGINT) stops the sweep after saving the
  current point's step: the result then holds "stopped_by", and the same call with the same
  workdir_root resumes that point."""
  if (output_dir is None) == (results_file is None):
    raise ValueError("give exactly one of output_dir (results.json) and results_file (a "
                     "list of records to append to)")
  settings, task, points, variants = _prepare(settings)
  if output_dir is not None and len(settings["peak_lrs"]) > 1:
    raise ValueError(f"peak_lrs {list(settings['peak_lrs'])}: several learning rates need "
                     f"results_file (records carry peak_lr); output_dir keeps one run per "
                     f"model")
  if output_dir is not None and len(settings["seeds"]) > 1:
    raise ValueError(f"seeds {list(settings['seeds'])}: several seeds need results_file "
                     f"(records carry seed); output_dir keeps one run per model")
  workdir_root = workdir_root or tempfile.mkdtemp(prefix="recall_sweep_")
  if results_file is not None:
    return _run_into_records(settings, task, points, variants, results_file, workdir_root,
                             log)
  os.makedirs(output_dir, exist_ok=True)
  results = {"task": task, "settings": settings, "device": jax.devices()[0].device_kind,
             "chance": chance_accuracy(task), "models": []}
  sweep_start = time.perf_counter()
  for point in points:
    log(f"== {point['name']} (pattern {point['model'].layer_kinds})")
    record = run_point(point, settings, task, variants,
                       workdir=os.path.join(workdir_root, point["name"]), log=log)
    if record.get("stopped_by"):  # a signal: that point's step is saved; no plots
      results["stopped_by"] = record["stopped_by"]
      log(f"  {point['name']}: {record['stopped_by']}; rerun with "
          f"--workdir_root={workdir_root} to resume")
      records.write_json(os.path.join(output_dir, "results.json"), results)
      return results
    results["models"].append(record)
    results["wall_s"] = time.perf_counter() - sweep_start
    log(f"  {point['name']}: accuracy {record['accuracy']:.3f}, state "
        f"{record['state_bytes']:,} B, {record['train_s']:.1f} s")
    records.write_json(os.path.join(output_dir, "results.json"), results)
  results["plots"] = recall_plots.write_plots(results, output_dir)
  records.write_json(os.path.join(output_dir, "results.json"), results)
  log(recall_plots.format_table(results))
  return results


def _run_into_records(settings, task, points, variants, results_file, workdir_root, log
                      ) -> dict[str, Any]:
  existing = load_records(results_file)  # a malformed file fails before training
  done = {record.get("run_key") for record in existing}
  directory = os.path.dirname(os.path.abspath(results_file))
  os.makedirs(directory, exist_ok=True)
  rule = plateau_rule(settings)
  outcome = {"results_file": results_file, "ran": [], "skipped": [], "records": [],
             "stopped_by": None}
  sweep_start = time.perf_counter()
  several_rates = len(settings["peak_lrs"]) > 1
  several_seeds = len(settings["seeds"]) > 1
  for point in points:
    key = run_key(point, task, train_config_of(settings, point), rule, settings)
    # A model trained at several rates or seeds: its name, rate and seed tell the runs
    # apart in the log.
    label = (point["name"] + (f" at lr {point['peak_lr']:g}" if several_rates else "")
             + (f" seed {point['seed']}" if several_seeds else ""))
    if key in done:
      log(f"== {label}: in {results_file} already ({key}), skipped")
      outcome["skipped"].append(label)
      continue
    log(f"== {label} (pattern {point['model'].layer_kinds}, peak_lr {point['peak_lr']:g}, "
        f"run {key})")
    # Workdirs by run key: a name alone may recur with other settings in another preset.
    record = run_point(point, settings, task, variants,
                       workdir=os.path.join(workdir_root, key), log=log, key=key)
    if record.get("stopped_by"):
      outcome["stopped_by"] = record["stopped_by"]
      log(f"  {label}: {record['stopped_by']}; rerun with "
          f"--workdir_root={workdir_root} to resume it")
      break
    new = measurement_records(record)
    existing = load_records(results_file) + new  # re-read: another sweep may have appended
    records.write_json(results_file, existing)
    done.add(key)
    outcome["ran"].append(label)
    outcome["records"].extend(new)
    log(f"  {label}: accuracy {record['accuracy']:.3f}, state "
        f"{record['state_bytes']:,} B, {record['steps']} steps ({record['stop_reason']}), "
        f"{record['train_s']:.1f} s")
  outcome["wall_s"] = time.perf_counter() - sweep_start
  all_records = load_records(results_file)
  if all_records and outcome["stopped_by"] is None:
    log(recall_plots.format_record_table(all_records))
    if importlib.util.find_spec("matplotlib") is None:
      # The records are safe; a machine with matplotlib draws them.
      outcome["plots"] = []
      log(f"matplotlib is not installed: no plots; draw them with --replot={results_file}")
    else:
      outcome["plots"] = recall_plots.write_record_plots(all_records, results_file)
  return outcome
