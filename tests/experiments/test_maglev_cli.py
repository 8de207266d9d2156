"""The entry points on a Maglev workdir: train, evaluate (both BPBs), generate, describe."""

from __future__ import annotations

import json

import pytest

from experiments import common
from experiments import configs
from maglev_jax import model_kinds
from maglev_jax.model import Maglev

# maglev_tiny shrunk to seconds of CPU time (the comparison test trains the same model, so
# its compiled functions come from the shared cache).
TOY_FLAGS = [
    "--config=experiments/configs/maglev_tiny.py", "--config.model.d_model=32",
    "--config.model.num_layers=1",
    "--config.model.prefiller_pattern=A", "--config.model.num_heads=2",
    "--config.model.window=8", "--config.model.max_seq_len=32",
    "--config.train.seq_len=32", "--config.train.batch_size=4", "--config.train.steps=2",
    "--config.train.warmup_steps=1", "--config.train.log_every=1",
    "--config.train.eval_batch_size=4", "--config.train.eval_tokens=64",
]


def last_json(stdout: str) -> dict:
  return json.loads(stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def workdir(run_cli, toy_corpus, tmp_path_factory):
  workdir = tmp_path_factory.mktemp("maglev_cli") / "run"
  summary = last_json(run_cli("train", *TOY_FLAGS, f"--data={toy_corpus}",
                              f"--workdir={workdir}", "--sample_tokens=0"))
  assert summary["step"] == 2 and summary["val_bpb"] == summary["bpb_recurrent"]
  return workdir


def test_evaluate_reports_teacher_forced_and_recurrent_bpb(run_cli, workdir):
  result = last_json(run_cli("evaluate", f"--workdir={workdir}"))
  assert result["step"] == 2 and result["tokens"] == 64
  bpbs = [result[f"bpb_{s}"] for s in ("teacher_forced", "recurrent", "memory_zeroed")]
  assert all(0 < bpb < 20 for bpb in bpbs) and len(set(bpbs)) == 3, result
  assert result["val_bpb"] == result["bpb_recurrent"]
  by_position = last_json(run_cli("evaluate", f"--workdir={workdir}", "--bucket_width=8"))
  buckets = by_position["by_position"]
  assert [(b["start"], b["end"]) for b in buckets] == [(0, 8), (8, 16), (16, 24), (24, 32)]
  assert sum(b["bpb_recurrent"] * b["val_bytes"] for b in buckets) == pytest.approx(
      result["bpb_recurrent"] * result["bytes"], rel=1e-9)
  saved = json.loads((workdir / "config.json").read_text())
  assert saved["kind"] == "maglev" and saved["model"]["sharing"] == "separate"


def test_metrics_jsonl_logs_the_ce_and_consistency_terms(workdir):
  lines = [json.loads(line) for line in (workdir / "metrics.jsonl").read_text().splitlines()]
  assert [line["step"] for line in lines] == [1, 2]
  for line in lines:
    # lambda = 1, no CE on Q (maglev_tiny): loss = ce + memory_loss, and no Q term logged.
    assert line["loss"] == pytest.approx(line["ce"] + line["memory_loss"], rel=1e-5)
    assert line["ce"] > 0 and line["memory_loss"] > 0 and "prefiller_ce" not in line


def test_generate_continues_the_prompt(run_cli, workdir):
  stdout = run_cli("generate", f"--workdir={workdir}", "--prompt=def ", "--num_tokens=6",
                   "--temperature=0")
  assert stdout.startswith("def ") and len(stdout) > len("def ")


def test_the_workdir_dispatches_to_maglev(workdir):
  kind = model_kinds.kind_of_workdir(str(workdir))
  assert kind is model_kinds.kind_named("maglev")
  model, params, _, step = kind.load(str(workdir))
  assert isinstance(model, Maglev) and step == 2 and set(params) == {"decoder", "prefiller"}


def test_describe_shows_both_sharing_modes():
  config, _, _ = common.lm_configs(configs.get_config("maglev_tiny"))
  result = model_kinds.kind_named("maglev").describe(config, None)
  parameters = result["parameters"]
  assert parameters["shared"]["total"] < parameters["separate"]["total"]
  assert result["decoder_pattern"] == "SSSS" and result["prefiller_pattern"] == "SASA"
