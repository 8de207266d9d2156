"""The Maglev study's bookkeeping: setting names, the runs they expand to, records appended
and skipped by key, merging, and the table (training itself is faked here; the CLI test
trains a toy preset end to end)."""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np
import pytest

from maglev_jax import equal_tokens
from maglev_jax import model_kinds
from maglev_jax import study
from maglev_jax import study_plots
from maglev_jax.config import MaglevConfig
from sdm_jax.training import records
from sdm_jax.training.config import DataConfig, TrainConfig
from sdm_jax.training.run_data import Data

MAGLEV = MaglevConfig(vocab_size=40, d_model=32, num_layers=2, num_heads=2, window=8,
                      max_seq_len=32)
TRAIN = TrainConfig(batch_size=4, seq_len=32, steps=3, warmup_steps=1)
NAMES = ("maglev_toy", "maglev_toy_swa")


def base_runs(**baseline_fields):
  maglev = equal_tokens.Run(model_kinds.kind_named("maglev"), MAGLEV, TRAIN, DataConfig())
  decoder = dataclasses.replace(MAGLEV.decoder_config(), **baseline_fields)
  baseline = equal_tokens.Run(model_kinds.kind_named("lm"), decoder, TRAIN, DataConfig())
  return maglev, baseline


def test_setting_names_read_back_to_the_same_setting():
  for name in ("swa", "separate_l0", "shared_l0.1", "separate_l0.3_sg", "shared_l1_qce0.5",
               "separate_l1_sg_qce0.25"):
    assert study.parse_setting(name).name == name
  setting = study.parse_setting("shared_l0.10_sg_qce1.0")
  assert setting == study.Setting("maglev", "shared", 0.1, True, 1.0)
  assert setting.name == "shared_l0.1_sg_qce1"
  assert study.parse_setting("swa") == study.Setting("swa")
  for bad in ("tied_l1", "separate", "separate_l-1", "separate_l1_qce", "SWA", "separate_l1_x"):
    with pytest.raises(ValueError, match="is not a setting"):
      study.parse_setting(bad)
  assert [s.name for s in study.parse_settings(" swa, separate_l1 ,")] == ["swa", "separate_l1"]
  with pytest.raises(ValueError, match="each once"):
    study.parse_settings("separate_l1,separate_l1.0")
  with pytest.raises(ValueError, match="at least one"):
    study.parse_settings("")


def test_runs_vary_only_the_setting_and_seed_on_one_decoder():
  maglev, baseline = base_runs()
  runs = study.study_runs(maglev, baseline, study.parse_settings("swa,shared_l0.3_sg_qce0.5"),
                          [0, 2], config_names=NAMES)
  assert [r.name for r in runs] == [
      "maglev_toy_swa_seed0_steps3", "maglev_toy_swa_seed2_steps3",
      "maglev_toy_shared_l0.3_sg_qce0.5_seed0_steps3",
      "maglev_toy_shared_l0.3_sg_qce0.5_seed2_steps3"]
  swa, _, shared, shared_seed2 = runs
  assert swa.run.model == MAGLEV.decoder_config() and swa.run.kind.config_class is not MaglevConfig
  assert shared.run.model == dataclasses.replace(
      MAGLEV, sharing="shared", memory_loss_weight=0.3, stop_gradient_target=True,
      prefiller_ce_weight=0.5)
  # Seeds move the initialisation and batches only; buckets are one window wide.
  assert shared_seed2.run.train == dataclasses.replace(TRAIN, seed=2, eval_bucket_width=8)
  assert shared.key == {"config": "maglev_toy", "baseline_config": "maglev_toy_swa",
                        "model": "maglev", "sharing": "shared", "lambda": 0.3,
                        "stop_gradient_target": True, "prefiller_ce_weight": 0.5, "seed": 0,
                        "tokens": 3 * 4 * 32, "overrides": {}}
  assert swa.key["sharing"] is None and swa.key["lambda"] is None
  with pytest.raises(ValueError, match="seeds"):
    study.study_runs(maglev, baseline, study.parse_settings("swa"), [1, 1], config_names=NAMES)


def test_the_baseline_must_be_the_maglev_decoder():
  maglev, baseline = base_runs(window=16)
  with pytest.raises(ValueError, match=r"equal decoder.*\['window'\]"):
    study.study_runs(maglev, baseline, study.parse_settings("swa"), [0], config_names=NAMES)
  maglev, baseline = base_runs()
  with pytest.raises(ValueError, match="Maglev config"):
    study.study_runs(baseline, baseline, study.parse_settings("swa"), [0], config_names=NAMES)
  longer = dataclasses.replace(baseline, train=dataclasses.replace(TRAIN, steps=6))
  with pytest.raises(ValueError, match="equal tokens"):
    study.study_runs(maglev, longer, study.parse_settings("swa"), [0], config_names=NAMES)


def fake_train_run(trained: list[str], stop_at: str | None = None):
  """equal_tokens.train_run without training: random BPBs, a metrics.jsonl line."""
  rng = np.random.default_rng(len(trained))

  def train_run(name, run, *, workdir, data, log):
    del data, log
    trained.append(name)
    if name == stop_at:
      return {"stopped_by": "SIGTERM", "step": 1}, None, None
    maglev = isinstance(run.model, MaglevConfig)
    bpbs = {s: float(rng.uniform(1, 3)) for s in ("teacher_forced", "recurrent",
                                                  "memory_zeroed")}
    buckets = [{"start": s, "end": s + 8, "val_bpb": float(rng.uniform(1, 3)),
                "val_tokens": 16, "val_bytes": 16} for s in (0, 8, 16, 24)]
    result = {"val_bpb": bpbs["recurrent"], "val_tokens": 64, "val_bytes": 64,
              "by_position": buckets, "step_ms": float(rng.uniform(1, 9)),
              "wall_s": float(rng.uniform(1, 9)), "parameters_total": 1000,
              "describe": {"sharing": "separate",
                           "parameters": {"separate": {"inference": 600}}}}
    if maglev:
      result.update({f"bpb_{s}": value for s, value in bpbs.items()})
    os.makedirs(workdir, exist_ok=True)
    terms = {"ce": 2.5, "memory_loss": 0.25} if maglev else {}
    with open(os.path.join(workdir, records.METRICS_FILE), "w") as f:
      f.write(json.dumps({"step": 3, "loss": 2.75, **terms}) + "\n")
    return result, None, None
  return train_run


def test_records_are_appended_per_run_and_recorded_runs_are_skipped(monkeypatch, tmp_path):
  maglev, baseline = base_runs()
  runs = study.study_runs(maglev, baseline, study.parse_settings("swa,separate_l0.1"), [0],
                          config_names=NAMES)
  tokens = np.random.default_rng(0).integers(0, 40, 64).astype(np.int32)  # the fake ignores them
  data = Data(train=tokens, val=tokens, tokenizer=None, token_bytes=np.ones(40, np.int64),
              max_id=int(tokens.max()))
  out = str(tmp_path / "study.json")
  trained: list[str] = []
  monkeypatch.setattr(equal_tokens, "train_run", fake_train_run(trained))
  summary = study.run_study(runs, data, out=out, workdir_root=str(tmp_path / "runs"),
                            log=lambda line: None)
  assert summary["trained"] == [r.name for r in runs] and summary["stopped_by"] is None
  saved = study.read_records(out)
  assert saved == json.loads(json.dumps(summary["records"]))
  swa, separate = saved
  assert separate["recurrent_minus_teacher_forced"] == pytest.approx(
      separate["bpb_recurrent"] - separate["bpb_teacher_forced"])
  assert (separate["setting"], separate["lambda"], separate["train_memory_loss"],
          separate["parameters_inference"]) == ("separate_l0.1", 0.1, 0.25, 600)
  assert swa["bpb_recurrent"] is None and swa["train_ce"] == 2.75
  assert swa["parameters_inference"] == 1000 and len(swa["bpb_by_position"]) == 4
  # Again, with one more seed: only the new runs train.
  more = study.study_runs(maglev, baseline, study.parse_settings("swa,separate_l0.1"), [0, 1],
                          config_names=NAMES)
  trained.clear()
  again = study.run_study(more, data, out=out, log=lambda line: None)
  assert again["skipped"] == [runs[0].name, runs[1].name]
  assert trained == [r.name for r in more if r.seed == 1]
  assert len(study.read_records(out)) == 4
  # A signal stops the study after the run it cut, which is not recorded.
  monkeypatch.setattr(equal_tokens, "train_run",
                      fake_train_run(trained, stop_at=more[0].name.replace("seed0", "seed2")))
  seeds = study.study_runs(maglev, baseline, study.parse_settings("swa,separate_l0.1"), [2],
                           config_names=NAMES)
  stopped = study.run_study(seeds, data, out=out, log=lambda line: None)
  assert stopped["stopped_by"] == "SIGTERM" and stopped["trained"] == []
  assert len(study.read_records(out)) == 4
  with pytest.raises(ValueError, match="bytes per token"):
    study.run_study(seeds, data._replace(token_bytes=None), out=out)


def test_merging_adds_only_unrecorded_runs_and_the_table_compares_with_swa():
  def record(setting, seed, bpb):
    parsed = study.parse_setting(setting)
    maglev = parsed.model == "maglev"
    return {"config": "c", "baseline_config": "c_swa", "model": parsed.model,
            "sharing": parsed.sharing, "lambda": parsed.memory_loss_weight,
            "stop_gradient_target": parsed.stop_gradient_target,
            "prefiller_ce_weight": parsed.prefiller_ce_weight, "seed": seed, "tokens": 100,
            "overrides": {}, "setting": setting, "device": "cpu", "d_model": 8,
            "num_layers": 1, "window": 4, "seq_len": 8, "val_bpb": bpb,
            "bpb_recurrent": bpb if maglev else None,
            "bpb_teacher_forced": bpb - 0.5 if maglev else None,
            "bpb_memory_zeroed": bpb + 1 if maglev else None,
            "recurrent_minus_teacher_forced": 0.5 if maglev else None,
            "bpb_by_position": [{"start": 0, "end": 4, "val_bpb": bpb + 0.25},
                                {"start": 4, "end": 8, "val_bpb": bpb - 0.25}],
            "step_ms": 3.0, "train_s": 4.0}
  first = [record("swa", 0, 2.0), record("separate_l1", 0, 2.5)]
  merged, added = study.merge_records(first, [record("swa", 0, 9.0), record("swa", 1, 2.25),
                                              record("shared_l0.1", 0, 2.125)])
  assert added == 2 and [r["val_bpb"] for r in merged] == [2.0, 2.5, 2.25, 2.125]
  table = study_plots.format_table(merged)
  assert "SWA 2.1250 +- 0.1768 (2 seeds)" in table
  assert "best Maglev (recurrent) shared_l0.1 2.1250 (1 seed), +0.0000 vs SWA" in table
  assert "paired by seed" not in table  # one seed in common
  table = study_plots.format_table([*merged, record("shared_l0.1", 1, 2.0)])
  # Seed 0: 2.125 - 2.0, seed 1: 2.0 - 2.25.
  assert ("shared_l0.1 2.0625 +- 0.0884 (2 seeds), -0.0625 vs SWA; paired by seed "
          "-0.0625 +- 0.2652, below SWA in 1 of 2 seeds") in table
  assert study_plots.mean_and_spread([1.0, None, 3.0]) == (2.0, pytest.approx(2 ** 0.5))


def test_lambda_plot_keeps_far_off_settings_at_its_top_edge():
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  from matplotlib import pyplot as plt  # pylint: disable=g-import-not-at-top
  figure, axes = plt.subplots()
  points = [(axes, 0.0, 3.2, None), (axes, 0.1, 0.78, None), (axes, 0.3, 0.73, None),
            (axes, 1.0, 0.75, None)]
  for _, lam, bpb, _ in points:
    axes.plot([lam], [bpb], "o")
  study_plots._clip_outliers(points, swa_bpb=0.70)  # pylint: disable=protected-access
  low, top = axes.get_ylim()
  assert low < 0.70 and 0.78 < top < 1.0  # SWA and every near setting in view, 3.2 not
  assert [a.get_text() for a in axes.texts] == ["3.20 (off scale)"]
  study_plots._clip_outliers(points[1:], swa_bpb=0.70)  # nothing far off: nothing changes
  assert axes.get_ylim() == (low, top) and len(axes.texts) == 1
  plt.close(figure)
  # A labelled line (the by-position plot) is named once, with its range.
  figure, axes = plt.subplots()
  study_plots._clip_outliers(  # pylint: disable=protected-access
      [(axes, 0, 3.1, "separate_l0"), (axes, 1, 3.3, "separate_l0"), (axes, 0, 0.7, "swa")],
      swa_bpb=0.70)
  assert [a.get_text() for a in axes.texts] == ["separate_l0: 3.10-3.30 (off scale)"]
  plt.close(figure)
