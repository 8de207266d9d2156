"""The entry points end to end: train -> evaluate -> generate, describe, and their errors."""

from __future__ import annotations

import json
import os

import pytest

TINY = ["--config.model.d_model=32", "--config.model.num_heads=2", "--config.model.num_layers=2",
        "--config.model.pattern=SA", "--config.model.window=16", "--config.model.max_seq_len=64",
        "--config.train.seq_len=64", "--config.train.batch_size=4", "--config.train.log_every=1",
        "--config.train.eval_tokens=256", "--config.train.eval_batch_size=4",
        "--config.data.max_train_bytes=200000"]


def last_json(stdout):
  return json.loads(stdout.strip().splitlines()[-1])


SDM = ["--config.model.pattern=SM", "--config.model.sdm_slots=256",
       "--config.model.sdm_writes=8", "--config.model.sdm_reads=8",
       "--config.model.sdm_chunk_size=16"]


# The SDM run (its S layer is the sliding-window model's; train.bin corpora are
# test_token_corpus's) also takes M0's learning-rate multiplier from the command line: its
# optimizer state then has one more part, which the resume and `evaluate` must rebuild.
def test_train_evaluate_generate_round_trip(run_cli, tmp_path):
  config, overrides = "sdm_tiny", SDM + ["--config.train.m0_lr_multiplier=3.0"]
  workdir = str(tmp_path / "run")
  config_file = f"--config=experiments/configs/{config}.py"
  trained = last_json(run_cli("train", config_file, f"--workdir={workdir}",
                              "--steps=3", "--sample_tokens=8", *TINY, *overrides))
  assert trained["step"] == 3
  for key in ("train_loss", "val_bpb", "tokens_per_s"):
    assert trained[key] > 0
  # One CPU device: the default mesh, every parameter byte on it (float32 parameters).
  assert trained["mesh"] == {"data": 1, "fsdp": 1, "model": 1}
  assert trained["param_bytes"] == trained["param_bytes_per_device"]
  assert trained["param_bytes"] == 4 * last_json(run_cli(
      "describe", config_file, *TINY, *overrides))["parameters"]["total"]
  assert trained["peak_bytes_per_device"] is None  # CPU reports no memory statistics
  assert os.path.exists(os.path.join(workdir, "metrics.jsonl"))
  with open(os.path.join(workdir, "config.json")) as f:
    assert json.load(f)["train"]["m0_lr_multiplier"] == 3.0
  # A second call resumes: nothing left to train, same step.
  resumed = last_json(run_cli("train", config_file, f"--workdir={workdir}",
                              "--steps=3", "--sample_tokens=0", *TINY, *overrides))
  assert resumed["step"] == 3
  evaluated = last_json(run_cli("evaluate", f"--workdir={workdir}"))
  assert evaluated["val_bpb"] == pytest.approx(trained["val_bpb"], rel=1e-5)
  assert evaluated["tokens"] == 256
  generated = run_cli("generate", f"--workdir={workdir}", "--prompt=def ", "--num_tokens=12",
                      "--top_k=5")
  assert generated.startswith("def ")


def test_describe_prints_counts(run_cli):
  result = last_json(run_cli("describe", "--config=experiments/configs/attn_tiny.py",
                             "--context_len=1024"))
  assert result["parameters"]["total"] > 0
  assert result["decode_state_bytes_per_sequence"]["total"] > 0
  assert result["flops_per_token"]["total"] > 0


def test_describe_measures_slot_reuse_of_sdm_layers(run_cli):
  result = last_json(run_cli("describe", "--config=experiments/configs/sdm_tiny.py",
                             "--slot_reuse_sequences=1", "--slot_reuse_chunk=8"))
  (layer,) = result["slot_reuse"].values()
  for kind in ("writes", "reads"):
    assert 0 < layer[kind]["unique_fraction"] <= 1 <= layer[kind]["mean_segment"]
    assert layer[kind]["max_segment"] >= layer[kind]["mean_segment"]


def test_unknown_config_lists_the_known_ones(run_cli_process):
  out = run_cli_process("train", "--config=experiments/configs/nope.py")
  assert out.returncode != 0
  assert "known configs: attn_tiny" in out.stderr


def test_missing_data_path_is_an_error(run_cli_process, tmp_path):
  out = run_cli_process("train", f"--workdir={tmp_path}", f"--data={tmp_path}/missing.txt")
  assert out.returncode != 0
  assert "missing.txt" in out.stderr
