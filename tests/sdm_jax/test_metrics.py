from __future__ import annotations

import math

import numpy as np
import pytest

from sdm_jax import metrics
from sdm_jax.data.batches import eval_batches
from sdm_jax.data.tokenizer import BOS_ID, PAD_ID


def test_bits_per_byte_hand_computed():
  # 10 bytes at ln 2 nats each are 10 bits: 1 bit per byte.
  assert metrics.bits_per_byte(10 * math.log(2.0), 10) == pytest.approx(1.0)
  assert metrics.bits_per_byte(3.0, 4) == pytest.approx(3.0 / (4 * math.log(2.0)))


@pytest.mark.parametrize("total_bytes", [0, -3])
def test_bits_per_byte_rejects_no_bytes(total_bytes):
  with pytest.raises(ValueError, match="total_bytes"):
    metrics.bits_per_byte(1.0, total_bytes)


def test_evaluate_bpb_skips_specials_and_masked_positions():
  # Targets: 65 (byte), BOS (special), 66 (byte), PAD (masked), in one row.
  batch = {
      "inputs": np.array([[BOS_ID, 65, BOS_ID, 66]], dtype=np.int32),
      "targets": np.array([[65, BOS_ID, 66, PAD_ID]], dtype=np.int32),
      "mask": np.array([[1, 1, 1, 0]], dtype=np.float32),
  }
  nats = np.array([[0.5, 7.0, 1.5, np.inf]], dtype=np.float32)
  seen = []

  def nll_fn(inputs, targets):
    seen.append((inputs.copy(), targets.copy()))
    return nats

  result = metrics.evaluate_bpb(nll_fn, [batch, batch])
  assert result["tokens"] == 4
  assert result["bytes"] == 4
  assert result["nats"] == pytest.approx(4.0)
  assert result["val_bpb"] == pytest.approx(4.0 / (4 * math.log(2.0)))
  assert len(seen) == 2
  np.testing.assert_array_equal(seen[0][1], batch["targets"])


def test_evaluate_bpb_of_uniform_byte_model_is_eight_bits():
  tokens = np.concatenate([[BOS_ID], np.arange(100) % 256, [BOS_ID], np.arange(37)])
  uniform = lambda inputs, targets: np.full(targets.shape, math.log(256.0))
  result = metrics.evaluate_bpb(uniform, eval_batches(tokens, batch_size=3, seq_len=16))
  assert result["bytes"] == 137
  assert result["val_bpb"] == pytest.approx(8.0)


def test_evaluate_bpb_with_a_token_bytes_table():
  # Token 1 stands for 3 bytes, token 2 for 1, token 0 for none.
  batch = {"inputs": np.zeros((1, 3), np.int32), "targets": np.array([[1, 2, 0]], np.int32),
           "mask": np.ones((1, 3), np.float32)}
  result = metrics.evaluate_bpb(lambda i, t: np.array([[2.0, 1.0, 9.0]]), [batch],
                                token_bytes=np.array([0, 3, 1]))
  assert (result["bytes"], result["tokens"]) == (4, 2)
  assert result["val_bpb"] == pytest.approx(3.0 / (4 * math.log(2.0)))


def test_evaluate_bpb_rejects_wrong_nll_shape_and_empty_input():
  batch = {"inputs": np.zeros((2, 3), np.int32), "targets": np.zeros((2, 3), np.int32),
           "mask": np.ones((2, 3), np.float32)}
  with pytest.raises(ValueError, match="nll_fn"):
    metrics.evaluate_bpb(lambda i, t: np.zeros((2,)), [batch])
  with pytest.raises(ValueError, match="no scored targets"):
    metrics.evaluate_bpb(lambda i, t: np.zeros((2, 3)), [])


def test_evaluate_bpb_accepts_jax_outputs():
  jnp = pytest.importorskip("jax.numpy")
  tokens = np.array([BOS_ID, 1, 2, 3, 4])
  result = metrics.evaluate_bpb(lambda i, t: jnp.full(t.shape, 2.0, jnp.float32),
                                eval_batches(tokens, batch_size=2, seq_len=2))
  assert (result["tokens"], result["nats"]) == (4, pytest.approx(8.0))


def test_unigram_bits_per_byte_toy_case():
  # Vocab 4; train counts [2, 1, 0, 1] -> add-one [3, 2, 1, 2] / 8.
  train = np.array([0, 0, 1, 3])
  # Targets are val[1:] = [0, 1, 3, 2]; with token_bytes token 3 is a zero-byte special.
  val = np.array([3, 0, 1, 3, 2])
  token_bytes = np.array([1, 1, 1, 0])
  expected_nats = -(math.log(3 / 8) + math.log(2 / 8) + math.log(1 / 8))
  got = metrics.unigram_bits_per_byte(train, val, 4, token_bytes=token_bytes)
  assert got == pytest.approx(expected_nats / (3 * math.log(2.0)))


def test_unigram_bits_per_byte_default_byte_convention_skips_bos():
  train = np.array([BOS_ID, 97, 97, 98])
  val = np.array([BOS_ID, 97, BOS_ID, 98])
  counts = np.ones(259)
  counts[[BOS_ID, 97, 98]] += [1, 2, 1]
  expected_nats = -(math.log(counts[97] / counts.sum()) + math.log(counts[98] / counts.sum()))
  got = metrics.unigram_bits_per_byte(train, val, 259)
  assert got == pytest.approx(expected_nats / (2 * math.log(2.0)))


def test_unigram_bits_per_byte_rejects_ids_outside_vocab():
  with pytest.raises(ValueError, match="val_tokens"):
    metrics.unigram_bits_per_byte(np.array([0, 1]), np.array([0, 5]), 4)


def test_bpb_with_a_table_over_eval_batches_is_the_hand_computed_value():
  # Stream 5 3 0 2 3 1 with table bytes [0, 4, 1, 2, 0, 3]: targets 3 0 2 3 1 carry
  # 2 0 1 2 4 bytes; id 0 (a special) is not scored. nll = 0.5 * target id.
  stream = np.array([5, 3, 0, 2, 3, 1])
  table = np.array([0, 4, 1, 2, 0, 3])
  result = metrics.evaluate_bpb(lambda inputs, targets: 0.5 * targets,
                                eval_batches(stream, batch_size=2, seq_len=2),
                                token_bytes=table)
  nats = 0.5 * (3 + 2 + 3 + 1)
  assert (result["tokens"], result["bytes"]) == (4, 9)
  assert result["val_bpb"] == pytest.approx(nats / (9 * math.log(2.0)))


def test_evaluate_loss_is_the_mean_over_unmasked_targets():
  batch = {"inputs": np.zeros((1, 4), np.int32), "targets": np.array([[1, 2, 0, 7]], np.int32),
           "mask": np.array([[1, 1, 1, 0]], np.float32)}
  result = metrics.evaluate_loss(lambda i, t: np.array([[0.5, 1.0, 3.0, np.nan]]), [batch])
  assert result == {"val_loss": pytest.approx(1.5), "tokens": 3, "nats": pytest.approx(4.5)}
  with pytest.raises(ValueError, match="no scored targets"):
    metrics.evaluate_loss(lambda i, t: np.zeros((1, 4)), [{**batch, "mask": 0 * batch["mask"]}])


def test_evaluate_validation_says_why_without_a_table():
  stream = np.random.default_rng(0).integers(0, 900, 40)
  nll = lambda inputs, targets: np.log1p(targets.astype(np.float64))  # noqa: E731
  result = metrics.evaluate_validation(nll, eval_batches(stream, batch_size=2, seq_len=8),
                                       token_bytes=None)
  assert result["val_bpb"] is None and result["val_bytes"] is None
  assert result["val_bpb_unavailable"] == metrics.BPB_UNAVAILABLE
  assert "data.token_bytes" in result["val_bpb_unavailable"]
  assert result["val_tokens"] == 39
  assert result["val_loss"] == pytest.approx(np.log1p(stream[1:]).mean())
  table = np.random.default_rng(1).integers(1, 5, 900)
  with_table = metrics.evaluate_validation(nll, eval_batches(stream, batch_size=2, seq_len=8),
                                           token_bytes=table)
  assert set(with_table) == {"val_bpb", "val_tokens", "val_bytes"}
  assert with_table["val_bytes"] == table[stream[1:]].sum()
  with pytest.raises(ValueError, match="token_bytes must be"):
    metrics.evaluate_bpb(nll, [], token_bytes=None)


def test_unigram_counts_in_chunks_give_the_whole_stream_answer(monkeypatch):
  rng = np.random.default_rng(0)
  train, val = rng.integers(0, 70, 1000), rng.integers(0, 70, 301)
  table = rng.integers(0, 4, 70)
  whole = metrics.unigram_bits_per_byte(train, val, 70, token_bytes=table)
  monkeypatch.setattr(metrics, "_COUNT_CHUNK", 7)
  assert metrics.unigram_bits_per_byte(train, val, 70, token_bytes=table) == pytest.approx(
      whole, rel=1e-12)
  with pytest.raises(ValueError, match="val_tokens"):
    metrics.unigram_bits_per_byte(train, np.array([70, 1, 2]), 70, token_bytes=table)


def test_position_buckets_cover_the_window_once():
  assert metrics.position_buckets(10, 4) == [(0, 4), (4, 8), (8, 10)]
  assert metrics.position_buckets(8, 4) == [(0, 4), (4, 8)]
  assert metrics.position_buckets(3, 8) == [(0, 3)]
  with pytest.raises(ValueError, match="bucket width"):
    metrics.position_buckets(8, 0)


@pytest.mark.parametrize("with_table", [True, False])
def test_buckets_by_position_average_to_the_overall_metric(with_table):
  rng = np.random.default_rng(3)
  # 61 targets in windows of 10: the last window is padded with id 0, which the stream
  # never holds, so the nan nats there must not leak.
  stream = rng.integers(1, 50, 62)
  nats_of = rng.uniform(0.1, 5.0, 50)

  def nll(inputs, targets):
    nats = nats_of[targets] + 0.01 * np.arange(targets.shape[1])  # depends on the position
    return np.where(targets == 0, np.nan, nats)

  table = rng.integers(0, 4, 50) if with_table else None  # zero-byte ids are left out
  result = metrics.evaluate_validation(
      nll, eval_batches(stream, batch_size=4, seq_len=10), token_bytes=table, bucket_width=4)
  buckets = result["by_position"]
  assert [(b["start"], b["end"]) for b in buckets] == [(0, 4), (4, 8), (8, 10)]
  assert sum(b["val_tokens"] for b in buckets) == result["val_tokens"]
  # Each bucket against a direct sum over the targets at those positions.
  targets = stream[1:]
  positions = np.arange(targets.size) % 10
  for bucket in buckets:
    inside = (positions >= bucket["start"]) & (positions < bucket["end"])
    if with_table:
      inside &= table[targets] > 0
    nats = (nats_of[targets] + 0.01 * positions)[inside].sum()
    assert bucket["val_tokens"] == inside.sum()
    if with_table:
      assert bucket["val_bytes"] == table[targets][inside].sum()
      assert bucket["val_bpb"] == pytest.approx(
          nats / (np.log(2) * bucket["val_bytes"]), rel=1e-12)
    else:
      assert bucket["val_loss"] == pytest.approx(nats / inside.sum(), rel=1e-12)
  if with_table:
    mean = sum(b["val_bpb"] * b["val_bytes"] for b in buckets) / result["val_bytes"]
    assert mean == pytest.approx(result["val_bpb"], rel=1e-12)
  else:
    mean = sum(b["val_loss"] * b["val_tokens"] for b in buckets) / result["val_tokens"]
    assert mean == pytest.approx(result["val_loss"], rel=1e-12)


def test_a_bucket_without_targets_has_no_bpb_and_bad_widths_are_named():
  stream = np.random.default_rng(4).integers(1, 50, 6)  # 5 targets in a window of 8
  nll = lambda inputs, targets: np.ones(targets.shape)  # noqa: E731
  result = metrics.evaluate_validation(nll, eval_batches(stream, batch_size=1, seq_len=8),
                                       token_bytes=np.ones(50, np.int64), bucket_width=6)
  assert result["by_position"][1] == {"start": 6, "end": 8, "val_bpb": None, "val_tokens": 0,
                                      "val_bytes": 0}
  with pytest.raises(ValueError, match="bucket_width"):
    metrics.evaluate_validation(nll, eval_batches(stream, batch_size=1, seq_len=8),
                                token_bytes=None, bucket_width=0)
