"""Maglev's three BPBs: teacher-forced, recurrent (the honest one) and memory-zeroed.

The evaluator itself runs end to end in tests/experiments/test_maglev_cli.py (train and
evaluate a workdir); here, the memory sources it is built from.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from maglev_jax.evaluation import MEMORY_SOURCES, maglev_evaluator, maglev_nll_fn, memories_for
from maglev_jax.inference import recurrent_memories
from maglev_jax.model import shift_memories
from tests.maglev_jax.helpers import random_params, random_tokens, tiny_model


def test_memory_sources_feed_p_with_q_its_own_or_no_memory():
  model = tiny_model(num_layers=1, prefiller_pattern="A")
  params = random_params(model)
  tokens = random_tokens(model, 2, 7)

  @jax.jit
  def sources(params, tokens):
    got = {s: memories_for(model, params, tokens, s)
           for s in ("teacher_forced", "recurrent", "memory_zeroed")}
    targets = model.target_memories(params, tokens)
    want = {"teacher_forced": model.decoder_hidden(params, tokens, shift_memories(targets)),
            "recurrent": recurrent_memories(model, params, tokens),
            "memory_zeroed": model.decoder_hidden(params, tokens, jnp.zeros_like(targets))}
    return got, want
  got, want = sources(params, tokens)
  for source in want:
    np.testing.assert_allclose(got[source], want[source], rtol=1e-6, atol=1e-6)
  # Random parameters: the three sources give three different models.
  assert float(jnp.max(jnp.abs(got["recurrent"] - got["teacher_forced"]))) > 1e-3
  assert float(jnp.max(jnp.abs(got["recurrent"] - got["memory_zeroed"]))) > 1e-3


def test_unknown_memory_source_is_named():
  with pytest.raises(ValueError, match="source must be one of"):
    maglev_nll_fn(tiny_model(), "oracle")


def test_evaluator_divides_by_the_token_bytes_table_or_reports_losses_without_one():
  model = tiny_model(num_layers=1, prefiller_pattern="A")
  params = random_params(model)
  # 39 targets, so the last batch is padded: padding must not reach the scores (vocab 40).
  val = np.random.default_rng(0).integers(0, 40, 40)
  evaluate = lambda table: maglev_evaluator(  # noqa: E731
      model, val, batch_size=2, seq_len=8, max_tokens=None, token_bytes=table)(params)
  unknown = evaluate(None)
  assert unknown["val_bpb"] is None and "data.token_bytes" in unknown["val_bpb_unavailable"]
  assert unknown["val_loss"] == unknown["loss_recurrent"] and unknown["val_tokens"] == 39
  # One byte per token: BPB is the loss in bits.
  ones = evaluate(np.ones(40, np.int32))
  for source in MEMORY_SOURCES:
    assert np.isfinite(unknown[f"loss_{source}"])
    assert ones[f"bpb_{source}"] == pytest.approx(unknown[f"loss_{source}"] / math.log(2.0),
                                                  rel=1e-6)
  assert ones["val_bpb"] == ones["bpb_recurrent"] and "val_loss" not in ones
  table = np.random.default_rng(1).integers(1, 6, 40)
  assert evaluate(table)["val_bytes"] == table[val[1:]].sum()


def test_evaluator_by_position_buckets_average_to_each_sources_bpb():
  model = tiny_model(num_layers=1, prefiller_pattern="A")  # window 4
  params = random_params(model)
  val = np.random.default_rng(5).integers(0, 40, 35)  # 34 targets in windows of 12
  table = np.random.default_rng(6).integers(1, 4, 40)  # bytes differ between ids
  result = maglev_evaluator(model, val, batch_size=2, seq_len=12, max_tokens=None,
                            token_bytes=table, bucket_width=4)(params)
  buckets = result["by_position"]
  assert [(b["start"], b["end"]) for b in buckets] == [(0, 4), (4, 8), (8, 12)]
  assert sum(b["val_bytes"] for b in buckets) == result["val_bytes"]
  for source in MEMORY_SOURCES:
    mean = sum(b[f"bpb_{source}"] * b["val_bytes"] for b in buckets) / result["val_bytes"]
    assert mean == pytest.approx(result[f"bpb_{source}"], rel=1e-9)
  for bucket in buckets:
    assert bucket["val_bpb"] == bucket["bpb_recurrent"]
    # Random parameters: the sources differ in every bucket, the first included.
    assert bucket["bpb_teacher_forced"] != bucket["bpb_recurrent"]
  # Without a table the buckets hold losses in nats per target.
  losses = maglev_evaluator(model, val, batch_size=2, seq_len=12, max_tokens=None,
                            token_bytes=None, bucket_width=8)(params)
  assert [(b["start"], b["end"]) for b in losses["by_position"]] == [(0, 8), (8, 12)]
  for source in MEMORY_SOURCES:
    mean = sum(b[f"loss_{source}"] * b["val_tokens"]
               for b in losses["by_position"]) / losses["val_tokens"]
    assert mean == pytest.approx(losses[f"loss_{source}"], rel=1e-9)
