"""A tiktoken encoding ("gpt2", "cl100k_base", "o200k_base", ...) as a `Tokenizer`.

tiktoken is optional (`pip install -e ".[tiktoken]"`) and imported only when an encoding
is asked for by name. The first use of an encoding on a machine downloads its BPE ranks;
tiktoken caches them (set TIKTOKEN_CACHE_DIR to reuse a copy on a machine without
network access).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sdm_jax.data.token_bytes import table_from_decoder

_REPLACEMENT = "\ufffd".encode("utf-8")


def load_encoding(name: str) -> Any:
  """The tiktoken encoding called `name`; ValueError if tiktoken is missing or does not
  know the name."""
  try:
    import tiktoken  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise ValueError(f"tokenizer {name!r} is a tiktoken encoding, and tiktoken is not "
                     f"installed: pip install -e \".[tiktoken]\" (or use tokenizer 'byte' or "
                     f"'none')") from None
  known = tiktoken.list_encoding_names()
  if name not in known:
    raise ValueError(f"unknown tokenizer {name!r}: give 'byte', 'none' or a tiktoken "
                     f"encoding ({', '.join(sorted(known))})")
  try:
    return tiktoken.get_encoding(name)
  except OSError as error:  # also what requests raises when the download fails
    raise ValueError(f"cannot load tiktoken encoding {name!r}: its first use on a machine "
                     f"downloads its BPE ranks; run once with network access, or set "
                     f"TIKTOKEN_CACHE_DIR to a copy of tiktoken's cache ({error})") from None


class TiktokenTokenizer:
  """A `Tokenizer` over a tiktoken `Encoding` (or anything with its methods).

  BOS is the encoding's end-of-text token (GPT-2's id 50256), which separates the
  documents of nanoGPT-style corpora. Text is encoded without special tokens; decoding
  shows special tokens by their text ("<|endoftext|>").
  """

  def __init__(self, encoding: Any):
    self._encoding = encoding
    self.name: str = encoding.name
    self.vocab_size: int = int(encoding.n_vocab)
    self.bos_id: int = int(encoding.eot_token)
    self._special_ids = frozenset(encoding.encode_single_token(token)
                                  for token in encoding.special_tokens_set)

  def encode(self, text: str) -> np.ndarray:
    if not isinstance(text, str):
      raise ValueError(f"text must be a str, got {type(text).__name__}")
    return np.asarray(self._encoding.encode_ordinary(text), dtype=np.int32)

  def _piece(self, token_id: int) -> bytes | None:
    """The bytes of one id (special tokens as their text); None for an id the encoding
    does not use (cl100k_base has gaps below n_vocab)."""
    if not 0 <= token_id < self.vocab_size:
      return None
    try:
      return self._encoding.decode_single_token_bytes(token_id)
    except KeyError:
      return None

  def decode(self, ids: Any) -> str:
    array = np.asarray(ids).reshape(-1)
    if array.size and not np.issubdtype(array.dtype, np.integer):
      raise ValueError(f"ids must be integer token ids, got dtype {array.dtype}")
    pieces = (self._piece(token) for token in array.tolist())
    return b"".join(_REPLACEMENT if piece is None else piece
                    for piece in pieces).decode("utf-8", errors="replace")

  def token_bytes(self) -> np.ndarray:
    return table_from_decoder(
        lambda token: None if token in self._special_ids else self._piece(token),
        self.vocab_size)
