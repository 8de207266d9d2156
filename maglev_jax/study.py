"""The Maglev study of issue 18 (importable without defining flags): does any setting of
Maglev beat sliding-window attention (SWA) at an equal decoder when P runs recurrently, and
how far apart are its teacher-forced and recurrent BPBs? The library behind
`experiments.maglev_study`.

A study trains named *settings* at equal tokens, each for some seeds, and appends one
record per run to a JSON file (a list of records). A setting is named on the command line:

  swa                       the baseline: Maglev's decoder P as a plain all-`S` LM;
  <sharing>_l<lambda>       Maglev with sharing "separate" or "shared" and memory loss weight
                            lambda, e.g. separate_l0.3, shared_l1;
    ..._sg                  with the stop-gradient on the targets m' (stop_gradient_target);
    ..._qce<w>              with an auxiliary CE of weight w on Q (prefiller_ce_weight),
                            e.g. separate_l1_sg_qce0.5.

Every Maglev setting starts from one Maglev config and the baseline is its decoder as an LM
(checked field by field), so P is the same network in every run. Runs train with
`maglev_jax.equal_tokens.train_run` (resume, signals, the kind's evaluation); validation
BPB is also taken per position bucket one window wide (train.eval_bucket_width, or the
window), so the first bucket shows where memory cannot help yet.

A run whose record is already in the file (same configs, setting, seed, tokens and
overrides: `run_key`) is skipped, so a study cut short is finished by running it again;
a run a signal stopped resumes from its checkpoint when its workdir is kept
(workdir_root).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import tempfile
import time
from typing import Any, Callable, Sequence

import jax

from maglev_jax import equal_tokens
from maglev_jax.config import SHARING, MaglevConfig
from sdm_jax.training import records
from sdm_jax.training.run_data import Data

BASELINE = "swa"
_MAGLEV_SETTING = re.compile(
    r"(?P<sharing>[a-z]+)_l(?P<weight>\d+(?:\.\d+)?)(?P<sg>_sg)?(?:_qce(?P<qce>\d+(?:\.\d+)?))?")
# The fields that identify a run: a record with the same values is that run, done.
RUN_KEY_FIELDS = ("config", "baseline_config", "model", "sharing", "lambda",
                  "stop_gradient_target", "prefiller_ce_weight", "seed", "tokens", "overrides")


@dataclasses.dataclass(frozen=True)
class Setting:
  """One trained setting: the SWA baseline (model "swa", the Maglev fields None) or Maglev
  (model "maglev") with its sharing and loss options."""
  model: str
  sharing: str | None = None
  memory_loss_weight: float | None = None
  stop_gradient_target: bool | None = None
  prefiller_ce_weight: float | None = None

  @property
  def name(self) -> str:
    """The canonical name (what `parse_setting` reads back)."""
    if self.model == BASELINE:
      return BASELINE
    name = f"{self.sharing}_l{self.memory_loss_weight:g}"
    if self.stop_gradient_target:
      name += "_sg"
    if self.prefiller_ce_weight:
      name += f"_qce{self.prefiller_ce_weight:g}"
    return name


def parse_setting(name: str) -> Setting:
  """"swa" or "<sharing>_l<lambda>[_sg][_qce<w>]" (module docstring) -> Setting."""
  if name == BASELINE:
    return Setting(BASELINE)
  match = _MAGLEV_SETTING.fullmatch(name)
  if not match or match["sharing"] not in SHARING:
    raise ValueError(f"settings: {name!r} is not a setting; give 'swa' or "
                     f"'<sharing>_l<lambda>[_sg][_qce<weight>]' with sharing in {SHARING}, "
                     f"e.g. separate_l0.3, shared_l0.1_sg, separate_l1_qce0.5")
  return Setting("maglev", match["sharing"], float(match["weight"]), bool(match["sg"]),
                 float(match["qce"] or 0.0))


def parse_settings(spec: str | Sequence[str]) -> list[Setting]:
  """A comma-separated string (or a list) of setting names -> distinct Settings, in order."""
  names = [n.strip() for n in spec.split(",")] if isinstance(spec, str) else list(spec)
  names = [n for n in names if n]
  settings = [parse_setting(name) for name in names]
  canonical = [s.name for s in settings]
  if not settings or len(set(canonical)) != len(canonical):
    raise ValueError(f"settings must name at least one setting, each once, got {names}")
  return settings


@dataclasses.dataclass(frozen=True)
class StudyRun:
  """One run of a study: a setting at a seed, its run and the fields of its record key."""
  name: str
  setting: Setting
  seed: int
  run: equal_tokens.Run
  key: dict[str, Any]


def check_baseline(maglev: equal_tokens.Run, baseline: equal_tokens.Run) -> None:
  """ValueError unless `maglev` is a Maglev run and `baseline` is its decoder P as a plain
  LM (every LMConfig field equal) trained the same way on the same data."""
  if not isinstance(maglev.model, MaglevConfig):
    raise ValueError(f"maglev_config must be a Maglev config (kind 'maglev'), got a "
                     f"{type(maglev.model).__name__}")
  decoder = maglev.model.decoder_config()
  if baseline.model != decoder:
    differ = sorted(f.name for f in dataclasses.fields(decoder)
                    if getattr(decoder, f.name) != getattr(baseline.model, f.name, None))
    raise ValueError(f"baseline_config must be the Maglev decoder P as an LM (an equal "
                     f"decoder); these model fields differ: {differ}")
  equal_tokens.check_equal_tokens([(maglev.train, maglev.data), (baseline.train, baseline.data)])


def study_runs(maglev: equal_tokens.Run, baseline: equal_tokens.Run,
               settings: Sequence[Setting], seeds: Sequence[int], *,
               config_names: tuple[str, str],
               overrides: dict[str, Any] | None = None) -> list[StudyRun]:
  """The runs of `settings` x `seeds` (settings outer), built on the two base runs.

  Each trains with train.seed = seed (initialisation and batches) and reports BPB by
  position buckets of train.eval_bucket_width, or of the window when that is unset.
  config_names: (Maglev config, baseline config), recorded; overrides: the model / train /
  data overrides applied to both, recorded and part of the key.
  """
  check_baseline(maglev, baseline)
  seeds = list(seeds)
  if not seeds or len(set(seeds)) != len(seeds) or min(seeds) < 0:
    raise ValueError(f"seeds must be distinct integers >= 0, at least one, got {seeds}")
  train = maglev.train
  bucket_width = train.eval_bucket_width or maglev.model.window
  tokens = train.steps * train.batch_size * train.seq_len
  runs = []
  for setting in settings:
    if setting.model == BASELINE:
      model, kind = baseline.model, baseline.kind
    else:
      model = dataclasses.replace(
          maglev.model, sharing=setting.sharing, memory_loss_weight=setting.memory_loss_weight,
          stop_gradient_target=setting.stop_gradient_target,
          prefiller_ce_weight=setting.prefiller_ce_weight)
      kind = maglev.kind
    for seed in seeds:
      run = equal_tokens.Run(kind, model, dataclasses.replace(
          train, seed=seed, eval_bucket_width=bucket_width), maglev.data)
      key = {"config": config_names[0], "baseline_config": config_names[1],
             "model": setting.model, "sharing": setting.sharing,
             "lambda": setting.memory_loss_weight,
             "stop_gradient_target": setting.stop_gradient_target,
             "prefiller_ce_weight": setting.prefiller_ce_weight, "seed": seed,
             "tokens": tokens, "overrides": overrides or {}}
      name = f"{config_names[0]}_{setting.name}_seed{seed}_steps{train.steps}"
      runs.append(StudyRun(name, setting, seed, run, key))
  return runs


def run_key(record: dict[str, Any]) -> str:
  """The identity of a run's record (RUN_KEY_FIELDS), as a comparable string."""
  return json.dumps({field: record.get(field) for field in RUN_KEY_FIELDS}, sort_keys=True)


def read_records(path: str) -> list[dict[str, Any]]:
  """The records of a study file; [] when it does not exist yet."""
  return records.read_record_list(path, "a Maglev study file")


def write_records(path: str, study_records: list[dict[str, Any]]) -> None:
  """Writes the records atomically (a kill never leaves half a file)."""
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  records.write_json(path, study_records)


def make_record(study_run: StudyRun, result: dict[str, Any], workdir: str) -> dict[str, Any]:
  """The JSON record of a trained run from `equal_tokens.train_run`'s result.

  Besides the key fields: the decoder's size and window; val_bpb (what users get: SWA's BPB,
  Maglev's recurrent BPB), Maglev's bpb_recurrent, bpb_teacher_forced, bpb_memory_zeroed
  and recurrent_minus_teacher_forced (None for SWA); bpb_by_position (the evaluator's
  buckets); step_ms (steady step), train_s (wall, compilation and evaluation included);
  parameters (total trained, and at inference); the last logged training loss and its
  terms (train_ce: SWA's loss; train_memory_loss: ||m - m'|| / sqrt(d), unweighted).
  """
  run, setting = study_run.run, study_run.setting
  last = records.last_metrics(workdir) or {}
  maglev = setting.model != BASELINE
  recurrent = result.get("bpb_recurrent")
  teacher_forced = result.get("bpb_teacher_forced")
  describe = result["describe"]
  inference_parameters = (describe["parameters"][describe["sharing"]]["inference"] if maglev
                          else result["parameters_total"])
  return {
      **study_run.key, "setting": setting.name, "steps": run.train.steps,
      "batch_size": run.train.batch_size, "seq_len": run.train.seq_len,
      "window": run.model.window, "d_model": run.model.d_model,
      "num_layers": run.model.num_layers, "device": jax.devices()[0].device_kind,
      "val_bpb": result["val_bpb"], "bpb_recurrent": recurrent,
      "bpb_teacher_forced": teacher_forced, "bpb_memory_zeroed": result.get("bpb_memory_zeroed"),
      "recurrent_minus_teacher_forced": (recurrent - teacher_forced) if maglev else None,
      "val_tokens": result["val_tokens"], "bucket_width": run.train.eval_bucket_width,
      "bpb_by_position": result["by_position"],
      "step_ms": result["step_ms"], "train_s": result["wall_s"],
      "parameters_total": result["parameters_total"],
      "parameters_inference": inference_parameters,
      "train_loss": last.get("loss"), "train_ce": last.get("ce", last.get("loss")),
      "train_memory_loss": last.get("memory_loss"),
      "train_prefiller_ce": last.get("prefiller_ce"),
  }


def run_study(runs: Sequence[StudyRun], data: Data, *, out: str,
              workdir_root: str | None = None,
              log: Callable[[str], None] = print) -> dict[str, Any]:
  """Trains the runs not yet recorded in `out`, appending each record as it finishes.

  Returns {"out", "trained": names, "skipped": names already recorded, "records": the new
  records, "stopped_by"}: a signal (SIGTERM, SIGINT) stops the study after the current
  run saved its step (not recorded; rerun with the same workdir_root to resume it).
  """
  if data.token_bytes is None:
    raise ValueError("the Maglev study compares bits per byte: the data needs bytes per "
                     "token (data.tokenizer or data.token_bytes)")
  workdir_root = workdir_root or tempfile.mkdtemp(prefix="maglev_study_")
  done = {run_key(record) for record in read_records(out)}
  summary: dict[str, Any] = {"out": out, "workdir_root": workdir_root, "trained": [],
                             "skipped": [], "records": [], "stopped_by": None}
  start = time.perf_counter()
  for study_run in runs:
    if run_key(study_run.key) in done:
      summary["skipped"].append(study_run.name)
      log(f"== {study_run.name}: already in {out}, skipped")
      continue
    workdir = os.path.join(workdir_root, study_run.name)
    result, _, _ = equal_tokens.train_run(study_run.name, study_run.run, workdir=workdir,
                                          data=data, log=log)
    if result.get("stopped_by"):
      summary["stopped_by"] = result["stopped_by"]
      log(f"  {study_run.name}: {result['stopped_by']} at step {result['step']}; rerun with "
          f"--workdir_root={workdir_root} to resume it")
      break
    record = make_record(study_run, result, workdir)
    # Appended to what the file holds now, so records merged into it meanwhile stay.
    write_records(out, [*read_records(out), record])
    done.add(run_key(record))
    summary["trained"].append(study_run.name)
    summary["records"].append(record)
    log(f"  {study_run.name}: recurrent BPB {record['val_bpb']:.4f}"
        + ("" if record["bpb_teacher_forced"] is None else
           f", teacher-forced {record['bpb_teacher_forced']:.4f}")
        + f", {record['train_s']:.1f} s ({time.perf_counter() - start:.0f} s so far)")
  return summary


def merge_records(study_records: list[dict[str, Any]],
                  more: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
  """`study_records` followed by the records of `more` whose run is not among them (by
  `run_key`); returns (merged records, how many were added)."""
  seen = {run_key(record) for record in study_records}
  added = []
  for record in more:
    if run_key(record) not in seen:
      seen.add(run_key(record))
      added.append(record)
  return [*study_records, *added], len(added)
