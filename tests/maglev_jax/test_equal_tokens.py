"""`maglev_jax.equal_tokens`: what makes runs comparable, and the table of a summary. The
training itself runs end to end in tests/experiments/test_compare.py."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from maglev_jax.equal_tokens import check_equal_tokens, compare, format_table
from sdm_jax.metrics import BPB_UNAVAILABLE
from sdm_jax.training.config import DataConfig, TrainConfig
from sdm_jax.training.run_data import Data


def test_runs_must_train_equal_tokens_of_the_same_data_and_score_the_same_targets():
  train, data = TrainConfig(), DataConfig(path="corpus.txt")
  # Settings that do not change the tokens seen or scored may differ.
  assert check_equal_tokens([(train, data), (dataclasses.replace(train, peak_lr=1e-4),
                                             data)]) == data
  for field, value in (("steps", 99), ("batch_size", 8), ("seq_len", 128),
                       ("eval_tokens", 1024)):
    with pytest.raises(ValueError, match="equal tokens"):
      check_equal_tokens([(train, data), (dataclasses.replace(train, **{field: value}), data)])
  with pytest.raises(ValueError, match="equal tokens"):
    check_equal_tokens([(train, data), (train, dataclasses.replace(data, path="other.txt"))])


def test_compare_refuses_an_empty_set_of_runs():
  tokens = np.random.default_rng(0).integers(0, 256, 100)
  with pytest.raises(ValueError, match="at least one run"):
    compare({}, Data(tokens, tokens, None, None, int(tokens.max())))


def test_table_shows_losses_where_bytes_per_token_are_unknown():
  describe = {"parameters": {"total": 1000, "non_memory": 600, "memory_m0": 400},
              "decode_state_bytes_per_sequence": {"total": 4096}}
  summary = {
      "device": "cpu", "steps": 2, "tokens_per_model": 128, "unigram_bpb": None,
      "bpb_unavailable": BPB_UNAVAILABLE,
      "models": {
          "sdm_tiny": {"val_bpb": None, "val_loss": 5.5, "step_ms": 12.34, "wall_s": 3.0,
                       "parameters_total": 1000, "describe": describe},
          "maglev_tiny": {"val_bpb": None, "val_loss": 6.125, "step_ms": None, "wall_s": 2.0,
                          "parameters_total": 900,
                          "describe": {"inference_state_bytes_per_sequence": {"total": 64}}}}}
  table = format_table(summary)
  assert "BPB not reported" in table and "val_loss" in table.splitlines()[1]
  sdm_row = next(line for line in table.splitlines() if line.startswith("sdm_tiny"))
  assert sdm_row.split()[1:] == ["5.5000", "12.3", "3.0", "1,000", "600", "400", "4,096"]
  maglev_row = next(line for line in table.splitlines() if line.startswith("maglev_tiny"))
  assert maglev_row.split()[1:] == ["6.1250", "-", "2.0", "900", "-", "-", "64"]
