"""`experiments.maglev_study` end to end on CPU: the smoke preset (toy model, two steps, SWA
and two Maglev settings) writes a record with every field per run, a second run of the
preset trains nothing, --replot redraws the plots, --merge adds only new runs."""

from __future__ import annotations

import json

from maglev_jax import study

# What the issue asks of every record, and what the study adds to read it.
FIELDS = {"model", "sharing", "lambda", "stop_gradient_target", "prefiller_ce_weight", "seed",
          "tokens", "bpb_recurrent", "bpb_teacher_forced", "bpb_memory_zeroed",
          "recurrent_minus_teacher_forced", "val_bpb", "bpb_by_position", "step_ms",
          "train_s", "setting", "config", "window", "train_ce", "train_memory_loss"}
PNG = b"\x89PNG\r\n\x1a\n"


def test_smoke_preset_records_skips_and_replots(run_cli, toy_corpus, tmp_path):
  out = tmp_path / "study.json"
  flags = ["--config=experiments/configs/maglev_study.py:smoke", f"--config.data={toy_corpus}",
           f"--out={out}", f"--workdir_root={tmp_path / 'runs'}"]
  stdout = run_cli("maglev_study", *flags)
  summary = json.loads(stdout.strip().splitlines()[-1])
  saved = json.loads(out.read_text())
  assert [r["setting"] for r in saved] == ["swa", "separate_l1", "shared_l0.1_sg_qce0.5"]
  assert summary["records"] == saved and summary["skipped"] == []
  for record in saved:
    assert FIELDS <= set(record), FIELDS - set(record)
    assert record["tokens"] == 2 * 4 * 32 and record["window"] == 8 and record["step_ms"] > 0
    buckets = record["bpb_by_position"]
    assert [(b["start"], b["end"]) for b in buckets] == [(0, 8), (8, 16), (16, 24), (24, 32)]
    mean = sum(b["val_bpb"] * b["val_bytes"] for b in buckets) / record["val_tokens"]
    assert abs(mean - record["val_bpb"]) < 1e-9  # the byte tokenizer: one byte per target
  swa, separate, shared = saved
  assert swa["bpb_recurrent"] is None and swa["train_memory_loss"] is None
  for maglev in (separate, shared):
    assert maglev["val_bpb"] == maglev["bpb_recurrent"] != maglev["bpb_teacher_forced"]
    assert maglev["recurrent_minus_teacher_forced"] == (
        maglev["bpb_recurrent"] - maglev["bpb_teacher_forced"])
    assert maglev["train_memory_loss"] > 0
  assert (shared["sharing"], shared["lambda"], shared["stop_gradient_target"],
          shared["prefiller_ce_weight"]) == ("shared", 0.1, True, 0.5)
  assert shared["train_prefiller_ce"] > 0 and separate["train_prefiller_ce"] is None
  assert "best Maglev (recurrent)" in stdout
  for name in summary["plots"]:
    assert (tmp_path / name).read_bytes()[:8] == PNG
    (tmp_path / name).unlink()

  again = json.loads(run_cli("maglev_study", *flags).strip().splitlines()[-1])
  assert again["trained"] == [] and len(again["skipped"]) == 3
  assert json.loads(out.read_text()) == saved

  replotted = run_cli("maglev_study", f"--replot={out}")
  assert "shared_l0.1_sg_qce0.5" in replotted
  assert all((tmp_path / name).read_bytes()[:8] == PNG for name in summary["plots"])

  other = tmp_path / "other.json"
  study.write_records(str(other), [{**swa, "seed": 7}, separate])
  merged_out = run_cli("maglev_study", f"--merge={other}", f"--out={out}")
  assert f"{other}: 1 new records" in merged_out
  assert [r["seed"] for r in json.loads(out.read_text())] == [0, 0, 0, 7]
