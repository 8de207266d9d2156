"""The data a run's `DataConfig` names, loaded: both splits with their tokenizer and their
bytes-per-token table (`load_data`), checked against each other before anything trains,
and the model vocabulary they imply (`data_vocab_size`)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from sdm_jax.data import token_bytes as token_bytes_lib
from sdm_jax.data.corpus import holds_token_ids, load_corpus
from sdm_jax.data.tokenizer import (BYTE_TOKENIZER, NO_TOKENIZER, Tokenizer, model_vocab_size,
                                    tokenizer_named)
from sdm_jax.training.config import DataConfig


class Data(NamedTuple):
  """A data config's tokens, loaded (`load_data`).

  Attributes:
    train, val: the two splits as 1-D token streams.
    tokenizer: what the ids are (None: ids without a tokenizer).
    token_bytes: [>= max_id + 1] bytes per id for bits per byte (None: BPB not reported).
    max_id: the largest id in either split.
  """

  train: np.ndarray
  val: np.ndarray
  tokenizer: Tokenizer | None
  token_bytes: np.ndarray | None
  max_id: int


def bpb_table(data: DataConfig) -> np.ndarray | None:
  """The bytes per token id that bits per byte use: the data.token_bytes file if given,
  else the tokenizer's table; None without either (ids without a tokenizer)."""
  if data.token_bytes is not None:
    return token_bytes_lib.load_table(data.token_bytes)
  tokenizer = tokenizer_named(data.tokenizer)
  return None if tokenizer is None else tokenizer.token_bytes()


def load_data(data: DataConfig) -> Data:
  """The splits of a data config with their tokenizer and bytes-per-token table, checked:
  text is read with the byte tokenizer; every id lies in the tokenizer's range and in
  the table."""
  tokenizer = tokenizer_named(data.tokenizer)
  train = load_corpus(data.path, split="train", val_fraction=data.val_fraction,
                      max_bytes=data.max_train_bytes, vocab_size=None,
                      token_dtype=data.token_dtype)
  val = load_corpus(data.path, split="val", val_fraction=data.val_fraction, vocab_size=None,
                    token_dtype=data.token_dtype)
  if tokenizer != BYTE_TOKENIZER and not holds_token_ids(data.path):
    source = data.path or "the embedded corpus"
    raise ValueError(f"data.tokenizer={data.tokenizer!r}, but {source} is text, which is read "
                     f"with the byte tokenizer ('byte'); tokenise it first "
                     f"(experiments/prepare_corpus.py) and train on the token files")
  max_id = max(int(train.max()), int(val.max()))
  if tokenizer is not None and max_id >= tokenizer.vocab_size:
    raise ValueError(f"the data holds token id {max_id}, beyond the {tokenizer.vocab_size} ids "
                     f"of data.tokenizer={tokenizer.name!r}; set data.tokenizer to the "
                     f"tokenizer that made these ids (a tiktoken encoding such as 'gpt2') or "
                     f"to {NO_TOKENIZER!r}")
  table = bpb_table(data)
  if table is not None:
    token_bytes_lib.check_covers(table, max_id, "the data")
  return Data(train, val, tokenizer, table, max_id)


def data_vocab_size(data_config: DataConfig, data: Data | None = None) -> int:
  """The model vocabulary the data implies (`model_vocab_size`): its tokenizer's, else
  from its largest id (loading the data unless given)."""
  tokenizer = data.tokenizer if data is not None else tokenizer_named(data_config.tokenizer)
  if tokenizer is not None:
    return model_vocab_size(tokenizer)
  return model_vocab_size(None, (data or load_data(data_config)).max_id)
