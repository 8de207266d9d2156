"""`experiments.maglev_compare` at toy sizes on CPU: training, BPBs and prefill timing;
the Maglev family's config names and overrides."""

from __future__ import annotations

import json

import pytest

from experiments.common import build_runs
from experiments.configs import maglev_config_names
from tests.experiments.cli_flags import config_overrides

# The toy model of test_maglev_cli.py: its compiled training and evaluation are cached.
TOY_MODEL = dict(d_model=32, num_layers=1, prefiller_pattern="A", num_heads=2, window=8,
                 max_seq_len=32)
TOY_TRAIN = dict(seq_len=32, batch_size=4, warmup_steps=1, log_every=1, eval_batch_size=4,
                 eval_tokens=64)


def test_compare_trains_at_equal_tokens_and_times_both_prefills(run_cli, toy_corpus, tmp_path):
  stdout = run_cli("maglev_compare", "--size=tiny", "--models=maglev", "--steps=2",
                   f"--workdir_root={tmp_path}", f"--data={toy_corpus}",
                   *config_overrides("model", TOY_MODEL), *config_overrides("train", TOY_TRAIN),
                   "--prefill_batch=2",
                   "--prefill_len=12", "--repeats=1")
  summary = json.loads(stdout.strip().splitlines()[-1])
  assert summary["tokens_per_model"] == 2 * 4 * 32
  maglev = summary["models"]["maglev_tiny"]
  assert maglev["step"] == 2 and summary["unigram_bpb"] > 0
  assert maglev["val_bpb"] == maglev["bpb_recurrent"] and "bpb_teacher_forced" in maglev
  parameters = maglev["describe"]["parameters"][maglev["describe"]["sharing"]]
  assert parameters["inference"] < parameters["total"] == maglev["parameters_total"]
  prefill = summary["prefill"]["maglev_tiny"]
  assert prefill["tokens"] == 12 and 1 <= prefill["fixed_point_iterations"] <= 12
  assert prefill["fixed_point_max_error_vs_recurrent"] < 1e-3
  assert 1 <= prefill["iterations_to_recurrent_within_tol"] <= 12
  assert prefill["recurrent_ms"] > 0 and prefill["fixed_point_ms"] > 0
  assert "prefill maglev_tiny" in stdout


def test_overrides_reach_every_config_and_unknown_models_are_refused(toy_corpus):
  with pytest.raises(ValueError, match="subset of"):
    maglev_config_names("tiny", ["maglev", "gdn"])
  names = maglev_config_names("tiny", ["swa", "slsl", "maglev", "maglev_shared"])
  assert names == ["maglev_tiny_swa", "maglev_tiny_slsl", "maglev_tiny", "maglev_tiny_shared"]
  runs, _ = build_runs(names, steps=5, data_overrides={"path": toy_corpus},
                       model_overrides={"window": 16}, train_overrides={"seq_len": 64})
  assert len(runs) == 4
  for run in runs.values():
    assert (run.train.steps, run.train.seq_len, run.model.window, run.data.path) == (
        5, 64, 16, toy_corpus)
    assert run.train.warmup_steps <= run.train.steps
