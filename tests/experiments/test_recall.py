"""experiments.recall: a tiny attention model learns MQAR, --eval_file scores a saved file,
and bad input gives clear errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sdm_jax.data.mqar import mqar

TASK_FLAGS = ("--task=mqar", "--seq_len=32", "--num_kv_pairs=4", "--vocab_size=32")
# --config must precede its --config.* overrides.
TINY_MODEL = ("--config=attn_tiny", "--config.model.d_model=32",
              "--config.model.num_layers=2", "--config.model.pattern=AA",
              "--config.model.num_heads=2")
CHANCE = 1 / 16  # values are drawn from vocab_size // 2 = 16 ids.


@pytest.fixture(scope="module")
def trained(run_cli, tmp_path_factory):
  """(workdir, final JSON) of a tiny attention model trained on tiny MQAR."""
  workdir = str(tmp_path_factory.mktemp("recall") / "run")
  stdout = run_cli("recall", f"--workdir={workdir}", "--steps=150", "--batch_size=32",
                   *TASK_FLAGS, *TINY_MODEL, "--config.train.peak_lr=1e-2",
                   "--config.train.checkpoint_every=1000")
  return workdir, json.loads(stdout.strip().splitlines()[-1])


def test_learns_mqar_above_chance(trained):
  _, result = trained
  assert result["task"] == "mqar" and result["step"] == 150
  assert result["n"] == 256 and result["positions"] == 256 * 4
  # Chance is 1/16; a tiny model reaches ~0.25 here.
  assert result["accuracy"] > 2.5 * CHANCE, result


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
