"""LM training on a token stream: exact resume, the metrics log, input checks, and the
evaluator's bits per byte with a token_bytes table."""

from __future__ import annotations

import json
import math
import os

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sdm_jax.models.config import LMConfig
from sdm_jax.models.lm import LM
from sdm_jax.training.config import TrainConfig
from sdm_jax.training.lm_training import lm_evaluator, load_lm, train_lm

MODEL = LMConfig(vocab_size=259, d_model=32, num_layers=2, pattern="SA", num_heads=2,
                 window=8, max_seq_len=32)


def train_config(**overrides):
  values = dict(batch_size=4, seq_len=32, steps=6, peak_lr=1e-2, warmup_steps=2, log_every=1,
                checkpoint_every=3, eval_batch_size=4, eval_tokens=128)
  return TrainConfig(**{**values, **overrides})


def tokens(seed, n=4000):
  return np.random.default_rng(seed).integers(0, 256, n).astype(np.int32)


def quiet(_):
  pass


def test_resumed_run_reaches_the_same_parameters(tmp_path):
  train, val = tokens(0), tokens(1, 1000)
  straight = str(tmp_path / "straight")
  interrupted = str(tmp_path / "interrupted")
  summary = train_lm(MODEL, train_config(), train, val, straight, log=quiet)
  # Same schedule (steps=6), stopped after the step-3 checkpoint, then resumed.
  train_lm(MODEL, train_config(), train, val, interrupted, log=quiet,
           stop_after=3)
  resumed = train_lm(MODEL, train_config(), train, val, interrupted, log=quiet)
  assert summary["step"] == resumed["step"] == 6
  _, params_a, _, _ = load_lm(straight)
  _, params_b, _, _ = load_lm(interrupted)
  chex.assert_trees_all_close(params_a, params_b, rtol=1e-6, atol=1e-7)
  assert resumed["val_bpb"] == pytest.approx(summary["val_bpb"], rel=1e-6)
  records = [json.loads(line) for line in open(os.path.join(straight, "metrics.jsonl"))]
  assert [r["step"] for r in records] == [1, 2, 3, 4, 5, 6]
  assert set(records[0]) == {"step", "loss", "lr", "grad_norm", "tokens_per_s"}
  config = train_config()
  assert summary["step_ms"] == pytest.approx(
      1e3 * config.batch_size * config.seq_len / summary["tokens_per_s"])
  # A run that finds its work done trains nothing: no step time to report.
  again = train_lm(MODEL, config, train, val, straight, log=quiet)
  assert again["step"] == 6 and again["step_ms"] is None


def test_seq_len_longer_than_the_context_is_rejected(tmp_path):
  with pytest.raises(ValueError, match="max_seq_len"):
    train_lm(MODEL, train_config(seq_len=64), tokens(0), tokens(1), str(tmp_path), log=quiet)


def test_token_ids_outside_the_vocabulary_are_rejected(tmp_path):
  bad = tokens(0)
  bad[10] = 300
  with pytest.raises(ValueError, match="outside the model's vocabulary"):
    train_lm(MODEL, train_config(), bad, tokens(1), str(tmp_path), log=quiet)


def test_evaluator_bpb_with_a_token_bytes_table_is_the_hand_computed_value():
  config = LMConfig(vocab_size=64, d_model=32, num_layers=2, pattern="SA", num_heads=2,
                    window=4, max_seq_len=8)
  model = LM(config)
  params = jax.jit(model.init)(jax.random.PRNGKey(0), jnp.zeros((1, 8), jnp.int32))
  rng = np.random.default_rng(0)
  val = rng.integers(0, 50, 21).astype(np.uint16)  # 20 targets: windows of 8, 8 and 4
  table = rng.integers(0, 4, 64)  # some ids stand for no bytes
  result = lm_evaluator(model, val, batch_size=2, seq_len=8, max_tokens=None,
                        token_bytes=table)(params)
  nats = total_bytes = 0.0
  apply = jax.jit(model.apply)  # one compile per shape, not one per op
  for start in range(0, 20, 8):
    inputs, targets = val[start:start + 8], val[start + 1:start + 9]
    inputs = inputs[:targets.size]
    log_probs = jax.nn.log_softmax(apply(params, jnp.asarray(inputs[None], jnp.int32)))
    picked = np.asarray(log_probs[0, np.arange(targets.size), targets], np.float64)
    nats -= picked[table[targets] > 0].sum()
    total_bytes += table[targets].sum()
  assert result["val_bytes"] == total_bytes
  assert result["val_bpb"] == pytest.approx(nats / (math.log(2.0) * total_bytes), rel=1e-5)
  unknown = lm_evaluator(model, val, batch_size=2, seq_len=8, max_tokens=None,
                         token_bytes=None)(params)
  assert unknown["val_bpb"] is None and unknown["val_tokens"] == 20


def test_evaluator_by_position_buckets_of_the_window_average_to_the_overall_bpb():
  # The SWA baseline of a Maglev study: an all-S LM, buckets one window wide.
  config = LMConfig(vocab_size=64, d_model=32, num_layers=2, pattern="S", num_heads=2,
                    window=4, max_seq_len=12)
  model = LM(config)
  params = jax.jit(model.init)(jax.random.PRNGKey(1), jnp.zeros((1, 12), jnp.int32))
  val = np.random.default_rng(2).integers(0, 64, 41).astype(np.int32)  # 40 targets
  result = lm_evaluator(model, val, batch_size=2, seq_len=12, max_tokens=None,
                        bucket_width=4)(params)
  buckets = result["by_position"]
  assert [(b["start"], b["end"]) for b in buckets] == [(0, 4), (4, 8), (8, 12)]
  # 40 targets in windows of 12: 12 + 12 + 12 + 4, so the first bucket holds 16.
  assert [b["val_tokens"] for b in buckets] == [16, 12, 12]
  mean = sum(b["val_bpb"] * b["val_bytes"] for b in buckets) / result["val_bytes"]
  assert mean == pytest.approx(result["val_bpb"], rel=1e-9)
  # The first bucket by hand: positions 0..3 of every window.
  apply = jax.jit(model.apply)
  log_probs = [jax.nn.log_softmax(apply(params, jnp.asarray(val[s:s + 12][None])))
               for s in range(0, 40, 12)]
  nats = -sum(float(lp[0, p, val[s + p + 1]]) for lp, s in zip(log_probs, range(0, 40, 12))
              for p in range(4))
  assert buckets[0]["val_bpb"] == pytest.approx(nats / (math.log(2.0) * 16), rel=1e-5)
