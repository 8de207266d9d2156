"""The tiktoken adapter, on a stand-in encoding with tiktoken's interface (tiktoken is an
optional dependency and its real encodings need a download), and on a real tiktoken
`Encoding` built offline where tiktoken is installed."""

from __future__ import annotations

import numpy as np
import pytest

from sdm_jax.data.tiktoken_tokenizer import TiktokenTokenizer

EOT = "<|endoftext|>"


class FakeEncoding:
  """Bytes 0..255, two merges (256 "th", 257 "e "), an unused id 258 and the end-of-text
  special token 259: the parts of tiktoken.Encoding the adapter calls."""

  name = "fake_bpe"
  n_vocab = 260
  eot_token = 259
  special_tokens_set = {EOT}
  _merges = {b"th": 256, b"e ": 257}

  def encode_single_token(self, text):
    assert text == EOT
    return self.eot_token

  def encode_ordinary(self, text):
    data, ids, i = text.encode("utf-8"), [], 0
    while i < len(data):
      if data[i:i + 2] in self._merges:
        ids.append(self._merges[data[i:i + 2]])
        i += 2
      else:
        ids.append(data[i])
        i += 1
    return ids

  def decode_single_token_bytes(self, token):
    if token < 256:
      return bytes([token])
    pieces = {256: b"th", 257: b"e ", 259: EOT.encode()}
    if token not in pieces:
      raise KeyError(token)
    return pieces[token]


def test_adapter_encodes_decodes_and_names_bos():
  bpe = TiktokenTokenizer(FakeEncoding())
  assert (bpe.name, bpe.vocab_size, bpe.bos_id) == ("fake_bpe", 260, 259)
  ids = bpe.encode("the end")
  assert ids.dtype == np.int32
  np.testing.assert_array_equal(ids, [256, 257, 101, 110, 100])
  assert bpe.decode(ids) == "the end"
  # Specials decode to their text; unused and out-of-range ids to U+FFFD.
  assert bpe.decode([259, 256, 258, 104, 300]) == EOT + "th\ufffdh\ufffd"


def test_adapter_table_counts_bytes_with_specials_and_gaps_at_zero():
  table = TiktokenTokenizer(FakeEncoding()).token_bytes()
  assert table.shape == (260,)
  np.testing.assert_array_equal(table[:256], 1)
  np.testing.assert_array_equal(table[256:], [2, 2, 0, 0])
  # The bytes of a text's tokens add up to its UTF-8 length (what BPB divides by).
  text = "the théme "
  assert table[TiktokenTokenizer(FakeEncoding()).encode(text)].sum() == len(text.encode())


def test_adapter_on_a_real_tiktoken_encoding_built_offline():
  tiktoken = pytest.importorskip("tiktoken")
  ranks = {bytes([i]): i for i in range(256)}
  ranks.update({b"th": 256, b"the": 257})
  encoding = tiktoken.Encoding(name="offline_bpe", pat_str=r"\S+|\s+", mergeable_ranks=ranks,
                               special_tokens={EOT: 258})
  bpe = TiktokenTokenizer(encoding)
  assert (bpe.vocab_size, bpe.bos_id) == (259, 258)
  ids = bpe.encode("the theme")
  assert 257 in ids.tolist() and bpe.decode(ids) == "the theme"
  table = bpe.token_bytes()
  assert (table[257], table[258], table[65]) == (3, 0, 1)
