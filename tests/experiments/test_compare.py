"""`experiments.compare`: named configs trained for equal tokens and tabulated (toy sizes on
CPU)."""

from __future__ import annotations

import json

import pytest

from experiments.common import build_runs
from tests.experiments.cli_flags import TOY_LM_MODEL, TOY_LM_TRAIN, config_overrides


def test_compare_trains_each_config_and_reports_state_and_memory_apart(run_cli, toy_corpus,
                                                                        tmp_path):
  stdout = run_cli("compare", "--configs=gdn_tiny,sdm_tiny_no_m0", "--steps=2",
                   f"--workdir_root={tmp_path}", f"--data={toy_corpus}",
                   *config_overrides("model", TOY_LM_MODEL),
                   *config_overrides("train", TOY_LM_TRAIN),
                   f"--summary_file={tmp_path / 'summary.json'}")
  summary = json.loads(stdout.strip().splitlines()[-1])
  assert summary == json.loads((tmp_path / "summary.json").read_text())
  assert summary["tokens_per_model"] == 2 * 2 * 32 and set(summary["models"]) == {
      "gdn_tiny", "sdm_tiny_no_m0"}
  gdn, sdm = summary["models"]["gdn_tiny"], summary["models"]["sdm_tiny_no_m0"]
  for result in (gdn, sdm):
    assert result["step"] == 2 and result["val_bpb"] > 0 and result["step_ms"] > 0
    assert result["parameters_total"] == result["describe"]["parameters"]["total"]
  assert sdm["describe"]["parameters"]["memory_m0"] == 0
  # The SDM table (256 slots x 32) outweighs GDN's 2 x 16 x 16 state.
  assert (sdm["describe"]["decode_state_bytes_per_sequence"]["layer_3_M"]
          > gdn["describe"]["decode_state_bytes_per_sequence"]["layer_3_G"])
  table = stdout.split("tokens per model")[1]
  assert "gdn_tiny" in table and "sdm_tiny_no_m0" in table


def test_build_runs_applies_overrides_and_refuses_unequal_tokens(toy_corpus):
  runs, data = build_runs(["gdn_tiny", "sdm_tiny"], steps=5,
                          data_overrides={"path": toy_corpus}, model_overrides={"window": 16},
                          train_overrides={"seq_len": 64})
  assert data.tokenizer.name == "byte" and data.val.size > 0
  for run in runs.values():
    assert (run.train.steps, run.train.seq_len, run.model.window, run.data.path) == (
        5, 64, 16, toy_corpus)
    assert run.model.vocab_size == 259  # the byte tokenizer's, as the data implies
    assert run.train.warmup_steps <= run.train.steps
  with pytest.raises(ValueError, match="equal tokens"):
    build_runs(["gdn_tiny", "gdn_small"])
  with pytest.raises(ValueError, match="distinct"):
    build_runs(["gdn_tiny", "gdn_tiny"])
  with pytest.raises(ValueError, match="unknown config"):
    build_runs(["gdn_nope"])


def test_overrides_name_a_section_and_a_known_field(run_cli_process):
  process = run_cli_process("compare", "--configs=gdn_tiny", "--config.modle.window=4")
  assert process.returncode != 0
  assert 'Did you mean "model"' in process.stderr
  process = run_cli_process("compare", "--configs=gdn_tiny", "--config.model.windw=4")
  assert process.returncode != 0 and "windw" in process.stderr
