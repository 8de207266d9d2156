"""Byte-level tokenizer: token ids 0..255 are the UTF-8 bytes, then three special tokens.

Every byte token stands for exactly one byte of text and every special token for none,
which is what bits-per-byte counts (`token_byte_lengths`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

BYTE_VOCAB = 256
BOS_ID = 256  # Starts every document in a corpus stream.
EOS_ID = 257
PAD_ID = 258  # Fills the masked tail of evaluation batches.
VOCAB_SIZE = 259


def _as_ids(ids: Any, *, field: str = "ids") -> np.ndarray:
  """Integer array of token ids, checked to lie in [0, VOCAB_SIZE)."""
  array = np.asarray(ids)
  if array.size == 0:
    return array.astype(np.int32)
  if not np.issubdtype(array.dtype, np.integer):
    raise ValueError(f"{field} must be integer token ids, got dtype {array.dtype}")
  low, high = int(array.min()), int(array.max())
  if low < 0 or high >= VOCAB_SIZE:
    raise ValueError(
        f"{field} must lie in [0, {VOCAB_SIZE}) for the byte tokenizer, "
        f"got values in [{low}, {high}]")
  return array


def encode(text: str, *, add_bos: bool = False) -> np.ndarray:
  """UTF-8 bytes of `text` as int32 ids [len(bytes)], preceded by BOS_ID if `add_bos`."""
  if not isinstance(text, str):
    raise ValueError(f"text must be a str, got {type(text).__name__}")
  ids = np.frombuffer(text.encode("utf-8"), dtype=np.uint8).astype(np.int32)
  if add_bos:
    ids = np.concatenate([np.array([BOS_ID], dtype=np.int32), ids])
  return ids


def decode(ids: Any) -> str:
  """Text of the byte tokens in `ids` (any shape, flattened); specials are dropped.

  Invalid UTF-8 (for example a sample cut mid-character) becomes U+FFFD, not an error.
  """
  array = _as_ids(ids).reshape(-1)
  byte_values = array[array < BYTE_VOCAB].astype(np.uint8)
  return byte_values.tobytes().decode("utf-8", errors="replace")


def token_byte_lengths(ids: Any) -> np.ndarray:
  """Bytes each token stands for, same shape as `ids`: 1 for byte tokens, 0 for specials."""
  array = _as_ids(ids)
  return (array < BYTE_VOCAB).astype(np.int32)

