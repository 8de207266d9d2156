"""Tokenizers: the byte tokenizer (the default) and `tokenizer_named`, which also gives
a tiktoken encoding, behind one `Tokenizer` interface.

Byte tokenizer: token ids 0..255 are the UTF-8 bytes, then three special tokens. Every
byte token stands for exactly one byte of text and every special token for none, which
is what bits-per-byte counts (`token_byte_lengths`).

Prompts and samples: `prompt_ids` (a text prompt as ids) and `sample_text` (how a sample
prints, with or without a tokenizer).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol, Sequence

import numpy as np

from sdm_jax.data.token_bytes import table_from_decoder

BYTE_VOCAB = 256
BOS_ID = 256  # Starts every document in a corpus stream.
EOS_ID = 257
PAD_ID = 258
VOCAB_SIZE = 259
# The name of "no tokenizer": pre-tokenised ids whose text is unknown.
NO_TOKENIZER = "none"
# Vocabularies inferred from a BPE tokenizer or from the data are padded to a multiple of
# this (GPT-2's 50,257 ids -> 50,304, as nanoGPT pads them, for even matmul tiles).
VOCAB_MULTIPLE = 64
_REPLACEMENT = "\ufffd".encode("utf-8")


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



class Tokenizer(Protocol):
  """What training, evaluation and sampling need of a tokenizer.

  Attributes:
    name: what `tokenizer_named` takes ("byte", "gpt2", ...).
    vocab_size: its ids lie in [0, vocab_size).
    bos_id: the id that starts every document of a corpus, and every prompt.
  """

  name: str
  vocab_size: int
  bos_id: int

  def encode(self, text: str) -> np.ndarray:
    """int32 ids [n] of `text`, without BOS."""

  def decode(self, ids: Any) -> str:
    """Text of `ids` (any shape, flattened). Ids at or past vocab_size (a model
    vocabulary padded past the tokenizer's) show as U+FFFD, as invalid UTF-8 does."""

  def token_bytes(self) -> np.ndarray:
    """[vocab_size] int32: the UTF-8 bytes each id stands for, 0 for special tokens."""


@dataclasses.dataclass(frozen=True)
class ByteTokenizer:
  """The byte tokenizer (`encode`, `decode` above) as a `Tokenizer`."""

  name: str = "byte"
  vocab_size: int = VOCAB_SIZE
  bos_id: int = BOS_ID

  def encode(self, text: str) -> np.ndarray:
    return encode(text)

  def decode(self, ids: Any) -> str:
    array = np.asarray(ids).reshape(-1)
    if array.size and (not np.issubdtype(array.dtype, np.integer) or array.min() < 0):
      raise ValueError(f"ids must be non-negative integer token ids, got {array!r}")
    pieces = bytearray()
    for token in array.tolist():
      if token < BYTE_VOCAB:
        pieces.append(token)
      elif token >= VOCAB_SIZE:
        pieces += _REPLACEMENT
    return pieces.decode("utf-8", errors="replace")

  def token_bytes(self) -> np.ndarray:
    return BYTE_TOKEN_BYTES


BYTE_TOKENIZER = ByteTokenizer()
# The byte tokenizer's bytes per id: 1 for the 256 bytes, 0 for BOS/EOS/PAD.
BYTE_TOKEN_BYTES = table_from_decoder(lambda i: bytes([i]) if i < BYTE_VOCAB else None,
                                      VOCAB_SIZE)


def tokenizer_named(name: str) -> Tokenizer | None:
  """"byte": the byte tokenizer; "none" (`NO_TOKENIZER`): None, ids without a tokenizer;
  any other name: that tiktoken encoding ("gpt2", "cl100k_base", ...; needs the optional
  tiktoken package, see `tiktoken_tokenizer`)."""
  if not isinstance(name, str) or not name:
    raise ValueError(f"tokenizer must be 'byte', {NO_TOKENIZER!r} or a tiktoken encoding "
                     f"name, got {name!r}")
  if name == BYTE_TOKENIZER.name:
    return BYTE_TOKENIZER
  if name == NO_TOKENIZER:
    return None
  # Imported here: only a run that names a tiktoken encoding needs that module.
  from sdm_jax.data import tiktoken_tokenizer  # pylint: disable=g-import-not-at-top
  return tiktoken_tokenizer.TiktokenTokenizer(tiktoken_tokenizer.load_encoding(name))


def model_vocab_size(tokenizer: Tokenizer | None, max_id: int | None = None) -> int:
  """The model vocabulary a tokenizer (or, without one, the data) implies.

  The byte tokenizer: its 259 ids (byte-level models keep their exact head). Another
  tokenizer: its vocab_size rounded up to a multiple of VOCAB_MULTIPLE. No tokenizer: the
  largest id in the data + 1, rounded up the same way.
  """
  if isinstance(tokenizer, ByteTokenizer):
    return tokenizer.vocab_size
  if tokenizer is not None:
    size = tokenizer.vocab_size
  elif max_id is not None and max_id >= 0:
    size = int(max_id) + 1
  else:
    raise ValueError(f"without a tokenizer the vocabulary follows the data: give its largest "
                     f"id (max_id >= 0), got {max_id!r}")
  return -(-size // VOCAB_MULTIPLE) * VOCAB_MULTIPLE


def prompt_ids(tokenizer: Tokenizer, text: str) -> list[int]:
  """A text prompt as ids: BOS, then the text's tokens."""
  return [tokenizer.bos_id, *tokenizer.encode(text).tolist()]


def sample_text(tokenizer: Tokenizer | None, prompt: Sequence[int], sample: Sequence[int],
                prompt_text: str | None = None) -> str:
  """How a sample prints. With a tokenizer: `prompt_text` (else the decoded prompt), then
  the decoded sample. Without one: every id of prompt and sample, space-separated."""
  if tokenizer is None:
    return " ".join(str(int(token)) for token in [*prompt, *sample])
  if prompt_text is None:
    prompt_text = tokenizer.decode(np.asarray(prompt, np.int64))
  return prompt_text + tokenizer.decode(np.asarray(sample, np.int64))
