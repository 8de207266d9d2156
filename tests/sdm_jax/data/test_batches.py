from __future__ import annotations

import numpy as np
import pytest

from sdm_jax.data import batches


def _stream(n: int) -> np.ndarray:
  return (np.arange(n) % 250).astype(np.uint16)


def test_train_batch_shape_dtype_and_windows_are_slices_of_the_stream():
  tokens = np.arange(1000, dtype=np.uint32)
  batch = batches.train_batch(tokens, step=0, batch_size=5, seq_len=16, seed=1)
  assert batch.shape == (5, 17) and batch.dtype == np.int32
  # Consecutive ids in an arange stream mean each row is one contiguous window.
  np.testing.assert_array_equal(np.diff(batch, axis=1), 1)
  assert batch.min() >= 0 and batch.max() < 1000


def test_train_batch_is_a_pure_function_of_seed_and_step():
  tokens = np.arange(5000, dtype=np.uint32)
  kwargs = dict(batch_size=8, seq_len=32)
  first = batches.train_batch(tokens, step=7, seed=3, **kwargs)
  # Other calls in between (as in a run resumed from step 7) change nothing.
  batches.train_batch(tokens, step=6, seed=3, **kwargs)
  np.testing.assert_array_equal(first, batches.train_batch(tokens, step=7, seed=3, **kwargs))
  assert not np.array_equal(first, batches.train_batch(tokens, step=8, seed=3, **kwargs))
  assert not np.array_equal(first, batches.train_batch(tokens, step=7, seed=4, **kwargs))


def test_train_batch_covers_both_ends_of_a_short_stream():
  tokens = np.arange(6, dtype=np.uint16)  # Exactly two possible windows of 5.
  starts = {int(batches.train_batch(tokens, step=s, batch_size=4, seq_len=4, seed=0)[r, 0])
            for s in range(10) for r in range(4)}
  assert starts == {0, 1}


def test_train_batch_rejects_short_stream_and_bad_arguments():
  tokens = _stream(10)
  with pytest.raises(ValueError, match="seq_len \\+ 1"):
    batches.train_batch(tokens, step=0, batch_size=1, seq_len=10, seed=0)
  for bad in (dict(batch_size=0), dict(seq_len=0), dict(step=-1), dict(seed=-2)):
    kwargs = dict(step=0, batch_size=2, seq_len=4, seed=0) | bad
    with pytest.raises(ValueError, match=next(iter(bad))):
      batches.train_batch(tokens, **kwargs)
  with pytest.raises(ValueError, match="1-D integer"):
    batches.train_batch(tokens.astype(np.float32), step=0, batch_size=1, seq_len=4, seed=0)


@pytest.mark.parametrize("n, batch_size, seq_len", [(2, 1, 1), (50, 3, 7), (49, 2, 8),
                                                    (17, 4, 16), (100, 5, 4)])
def test_eval_batches_score_every_target_exactly_once(n, batch_size, seq_len):
  tokens = _stream(n)
  produced = list(batches.eval_batches(tokens, batch_size=batch_size, seq_len=seq_len))
  assert len(produced) == -(-batches.num_eval_windows(n, seq_len=seq_len) // batch_size)
  scored_targets, scored_inputs = [], []
  for batch in produced:
    assert batch["inputs"].shape == batch["targets"].shape == (batch_size, seq_len)
    assert batch["inputs"].dtype == batch["targets"].dtype == np.int32
    assert batch["mask"].dtype == np.float32
    real = batch["mask"] > 0
    assert np.all(batch["targets"][~real] == batches.PAD_FILL)
    assert np.all(batch["inputs"][~real] == batches.PAD_FILL)
    scored_targets.append(batch["targets"][real])
    scored_inputs.append(batch["inputs"][real])
  np.testing.assert_array_equal(np.concatenate(scored_targets), tokens[1:])
  np.testing.assert_array_equal(np.concatenate(scored_inputs), tokens[:-1])


def test_eval_batches_max_tokens_scores_only_that_many_targets():
  tokens = _stream(100)
  produced = list(batches.eval_batches(tokens, batch_size=2, seq_len=8, max_tokens=20))
  targets = np.concatenate([b["targets"][b["mask"] > 0] for b in produced])
  np.testing.assert_array_equal(targets, tokens[1:21])


def test_eval_batches_rejects_bad_input():
  with pytest.raises(ValueError, match="at least 2"):
    batches.eval_batches(_stream(1), batch_size=1, seq_len=4)
  with pytest.raises(ValueError, match="batch_size"):
    batches.eval_batches(_stream(10), batch_size=0, seq_len=4)
  with pytest.raises(ValueError, match="max_tokens"):
    batches.eval_batches(_stream(10), batch_size=1, seq_len=4, max_tokens=0)
