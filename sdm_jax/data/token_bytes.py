"""Bytes per token id: the table [vocab] that bits per byte divide by.

Entry i is the length of the UTF-8 text id i stands for; special tokens (BOS, end of
text) stand for none and hold 0, so they are not scored (`sdm_jax.metrics`). A
pre-tokenised corpus keeps its table beside its ids as a `.npy` file
(`experiments/prepare_corpus.py` writes `token_bytes.npy`), the way nanochat does.
"""

from __future__ import annotations

import os
from typing import Callable

import numpy as np

TABLE_DTYPE = np.dtype(np.int32)


def table_from_decoder(decode_token: Callable[[int], bytes | None],
                       vocab_size: int) -> np.ndarray:
  """[vocab_size] int32: len(decode_token(i)) for every id i; 0 where it returns None (a
  special token, or an id the tokenizer leaves unused)."""
  if isinstance(vocab_size, bool) or not isinstance(vocab_size, (int, np.integer)) or (
      vocab_size < 1):
    raise ValueError(f"vocab_size must be an int >= 1, got {vocab_size!r}")
  table = np.zeros(int(vocab_size), dtype=TABLE_DTYPE)
  for token_id in range(int(vocab_size)):
    text = decode_token(token_id)
    if text is not None:
      table[token_id] = len(text)
  return check_table(table, "the decoded table")


def check_table(table: np.ndarray, name: str) -> np.ndarray:
  """`table` as a read-only int32 array, checked: 1-D, integer, >= 0, some id > 0 bytes."""
  table = np.asarray(table)
  if table.ndim != 1 or table.size == 0 or not np.issubdtype(table.dtype, np.integer):
    raise ValueError(f"{name} must be a non-empty 1-D integer array [vocab] of bytes per "
                     f"token id, got shape {table.shape} and dtype {table.dtype}")
  if int(table.min()) < 0:
    raise ValueError(f"{name} holds a negative byte count ({int(table.min())}) at id "
                     f"{int(table.argmin())}")
  if int(table.max()) == 0:
    raise ValueError(f"{name} gives every token id 0 bytes: no target could be scored")
  table = table.astype(TABLE_DTYPE)
  table.setflags(write=False)
  return table


def load_table(path: str | os.PathLike) -> np.ndarray:
  """The table stored in a `.npy` file (`check_table`)."""
  path = os.fspath(path)
  if not os.path.isfile(path):
    raise ValueError(f"token_bytes file {path!r} does not exist")
  try:
    table = np.load(path, allow_pickle=False)
  except ValueError as error:
    raise ValueError(f"cannot read token_bytes file {path!r} as a .npy array: {error}") from None
  return check_table(table, f"token_bytes file {path!r}")


def save_table(path: str | os.PathLike, table: np.ndarray) -> None:
  """Writes a checked table as a `.npy` file."""
  np.save(path, check_table(table, "token_bytes"))


def check_covers(table: np.ndarray, max_id: int, what: str) -> None:
  """ValueError unless `table` has an entry for every id up to `max_id`."""
  if max_id >= table.shape[0]:
    raise ValueError(f"{what} holds token id {max_id}, but the token_bytes table has only "
                     f"{table.shape[0]} entries; it must give the bytes of every id")
