"""experiments.recall: a tiny attention model learns MQAR, --eval_file scores a saved file,
and bad input gives clear errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sdm_jax.data.mqar import mqar

TASK_FLAGS = ("--task=mqar", "--seq_len=32", "--num_kv_pairs=4", "--vocab_size=32")
# --config must precede its --config.* overrides.
TINY_MODEL = ("--config=experiments/configs/attn_tiny.py", "--config.model.d_model=32",
              "--config.model.num_layers=2", "--config.model.pattern=AA",
              "--config.model.num_heads=2")
CHANCE = 1 / 16  # values are drawn from vocab_size // 2 = 16 ids.


@pytest.fixture(scope="module")
def trained(run_cli, tmp_path_factory):
  """(workdir, final JSON) of a tiny attention model trained on tiny MQAR."""
  workdir = str(tmp_path_factory.mktemp("recall") / "run")
  stdout = run_cli("recall", f"--workdir={workdir}", "--steps=150", "--batch_size=32",
                   *TASK_FLAGS, *TINY_MODEL, "--config.train.peak_lr=1e-2",
                   "--config.train.checkpoint_every=1000", "--eval_seq_lens=16,32",
                   "--eval_num_kv_pairs=2,4")
  return workdir, json.loads(stdout.strip().splitlines()[-1])


def test_learns_mqar_above_chance(trained):
  _, result = trained
  assert result["task"] == "mqar" and result["step"] == 150
  assert result["n"] == 256 and result["positions"] == 256 * 4
  # Chance is 1/16; a tiny model reaches ~0.25 here.
  assert result["accuracy"] > 2.5 * CHANCE, result
  # The same held-out draw at the training length and pairs scores the same.
  assert [r["seq_len"] for r in result["by_seq_len"]] == [16, 32]
  assert [r["num_kv_pairs"] for r in result["by_num_kv_pairs"]] == [2, 4]
  assert result["by_seq_len"][1]["accuracy"] == result["accuracy"]
  assert result["by_num_kv_pairs"][1]["accuracy"] == result["accuracy"]
  assert [r["positions"] for r in result["by_num_kv_pairs"]] == [256 * 2, 256 * 4]


def test_eval_file(trained, run_cli, run_cli_process, tmp_path):
  workdir, _ = trained
  path = tmp_path / "held_out.npz"
  np.savez(path, **mqar(40, seq_len=32, num_kv_pairs=4, vocab_size=32, seed=123))
  result = json.loads(run_cli("recall", f"--workdir={workdir}",
                              f"--eval_file={path}").strip().splitlines()[-1])
  assert result["n"] == 40 and result["positions"] == 160
  assert 0.0 <= result["accuracy"] <= 1.0

  bad = tmp_path / "bad.npz"
  np.savez(bad, inputs=np.zeros((2, 32), np.int32))
  process = run_cli_process("recall", f"--workdir={workdir}", f"--eval_file={bad}")
  assert process.returncode != 0 and "lacks arrays ['targets']" in process.stderr

  misshapen = tmp_path / "misshapen.npz"
  np.savez(misshapen, inputs=np.zeros((2, 32), np.int32),
           targets=np.zeros((2, 16), np.int32))
  process = run_cli_process("recall", f"--workdir={workdir}", f"--eval_file={misshapen}")
  assert process.returncode != 0 and "must have the same non-empty shape" in process.stderr


def test_unknown_task_lists_known(run_cli_process, tmp_path):
  process = run_cli_process("recall", f"--workdir={tmp_path / 'run'}", "--task=bogus")
  assert process.returncode != 0
  assert "unknown recall task 'bogus'" in process.stderr
  assert "mqar" in process.stderr and "variable_tracking" in process.stderr
  assert not (tmp_path / "run").exists()


def test_needle_options_reach_the_generator_and_foreign_options_are_refused(
    run_cli, run_cli_process, tmp_path):
  process = run_cli_process("recall", f"--workdir={tmp_path / 'bad'}", "--task=single",
                            "--num_kv_pairs=3")
  assert process.returncode != 0
  assert "--num_kv_pairs is not an option of task 'single'" in process.stderr
  assert not (tmp_path / "bad").exists()
  workdir = tmp_path / "multi_key"
  stdout = run_cli("recall", f"--workdir={workdir}", "--task=multi_key", "--num_keys=3",
                   "--key_len=2", "--filler=repeat", "--seq_len=32", "--vocab_size=32",
                   "--steps=1", "--batch_size=2", "--eval_examples=4", *TINY_MODEL)
  assert json.loads(stdout.strip().splitlines()[-1])["n"] == 4
  saved = json.loads((workdir / "config.json").read_text())
  assert saved["task"] == {"name": "multi_key", "seq_len": 32, "vocab_size": 32,
                           "num_keys": 3, "key_len": 2, "filler": "repeat"}
