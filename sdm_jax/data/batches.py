"""Training and evaluation batches cut from a 1-D token stream.

A window of `seq_len + 1` tokens gives inputs `window[:-1]` and targets `window[1:]`.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

# Fills positions past the end of a stream. Every vocabulary has id 0; an id past a
# model's vocabulary would embed as NaN, which masked attention weights (0 * NaN) spread.
PAD_FILL = 0


def _check_positive(name: str, value: int) -> None:
  if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
    raise ValueError(f"{name} must be an int >= 1, got {value!r}")


def _as_stream(tokens: np.ndarray) -> np.ndarray:
  """`tokens` as a 1-D integer numpy array (arrays and memory maps are not copied)."""
  tokens = np.asarray(tokens)
  if tokens.ndim != 1 or not np.issubdtype(tokens.dtype, np.integer):
    raise ValueError(
        f"tokens must be a 1-D integer array, got shape {tokens.shape} and dtype "
        f"{tokens.dtype}")
  return tokens


def train_batch(tokens: np.ndarray, *, step: int, batch_size: int, seq_len: int,
                seed: int) -> np.ndarray:
  """Random windows [batch_size, seq_len + 1] int32 of `tokens`.

  Window starts are uniform over [0, len(tokens) - seq_len - 1], drawn from
  `np.random.default_rng((seed, step))`: the batch is a pure function of
  (tokens, seed, step), so a run resumed at `step` sees the batches an uninterrupted run
  would have seen.
  """
  tokens = _as_stream(tokens)
  _check_positive("batch_size", batch_size)
  _check_positive("seq_len", seq_len)
  for name, value in (("step", step), ("seed", seed)):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
      raise ValueError(f"{name} must be an int >= 0, got {value!r}")
  window = seq_len + 1
  if tokens.shape[0] < window:
    raise ValueError(
        f"tokens has {tokens.shape[0]} ids, fewer than seq_len + 1 = {window}; use a "
        f"larger corpus (or max_bytes) or a smaller seq_len")
  rng = np.random.default_rng((int(seed), int(step)))
  starts = rng.integers(0, tokens.shape[0] - window + 1, size=batch_size)
  positions = starts[:, None] + np.arange(window)
  return np.asarray(tokens[positions], dtype=np.int32)


def num_eval_windows(num_tokens: int, *, seq_len: int, max_tokens: int | None = None) -> int:
  """Windows `eval_batches` cuts from a stream of `num_tokens` ids: ceil(targets / seq_len)."""
  _check_positive("seq_len", seq_len)
  num_targets = max(num_tokens - 1, 0)
  if max_tokens is not None:
    _check_positive("max_tokens", max_tokens)
    num_targets = min(num_targets, max_tokens)
  return -(-num_targets // seq_len)


def eval_batches(tokens: np.ndarray, *, batch_size: int, seq_len: int,
                 max_tokens: int | None = None) -> Iterator[dict[str, np.ndarray]]:
  """Consecutive windows covering every target of `tokens` exactly once.

  Window i holds inputs `tokens[i*T : i*T + T]` and targets `tokens[i*T + 1 : i*T + T + 1]`
  (T = seq_len, stride T), so targets are `tokens[1:]` in order. Positions past the end
  of the stream hold PAD_FILL (id 0) with mask 0: the mask, not the id, marks them. The
  last batch is filled up to `batch_size` with all-masked rows so a jitted model sees
  one shape.

  Args:
    tokens: 1-D integer stream [n], n >= 2.
    batch_size, seq_len: rows per batch and positions per row.
    max_tokens: if given, deliberately scores only the first `max_tokens` targets
      (a quick evaluation by request); None scores all n - 1.

  Yields:
    {"inputs": [batch_size, T] int32, "targets": [batch_size, T] int32,
     "mask": [batch_size, T] float32 (1 where the target is real)}.
  """
  tokens = _as_stream(tokens)
  _check_positive("batch_size", batch_size)
  num_windows = num_eval_windows(tokens.shape[0], seq_len=seq_len, max_tokens=max_tokens)
  if num_windows == 0:
    raise ValueError(f"tokens needs at least 2 ids to give a target, got {tokens.shape[0]}")
  num_targets = tokens.shape[0] - 1
  if max_tokens is not None:
    num_targets = min(num_targets, max_tokens)
  # Checked above, generated lazily below: bad arguments fail at the call, not later.
  return _generate_eval_batches(tokens, batch_size, seq_len, num_targets, num_windows)


def _generate_eval_batches(tokens: np.ndarray, batch_size: int, seq_len: int,
                           num_targets: int,
                           num_windows: int) -> Iterator[dict[str, np.ndarray]]:
  # Token num_targets is the last target; reading past it would score more than asked.
  stream_end = num_targets + 1
  for first_window in range(0, num_windows, batch_size):
    inputs = np.full((batch_size, seq_len), PAD_FILL, dtype=np.int32)
    targets = np.full((batch_size, seq_len), PAD_FILL, dtype=np.int32)
    mask = np.zeros((batch_size, seq_len), dtype=np.float32)
    for row, window in enumerate(range(first_window, min(first_window + batch_size,
                                                         num_windows))):
      start = window * seq_len
      chunk = np.asarray(tokens[start:min(start + seq_len + 1, stream_end)])
      length = chunk.shape[0] - 1  # Targets in this window, 1..seq_len.
      inputs[row, :length] = chunk[:-1]
      targets[row, :length] = chunk[1:]
      mask[row, :length] = 1.0
    yield {"inputs": inputs, "targets": targets, "mask": mask}
