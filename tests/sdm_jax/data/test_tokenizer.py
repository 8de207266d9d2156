from __future__ import annotations

import numpy as np
import pytest

from sdm_jax.data import tokenizer
from sdm_jax.data.tokenizer import BOS_ID, EOS_ID, PAD_ID, VOCAB_SIZE


def test_special_ids_follow_the_bytes():
  assert tokenizer.BYTE_VOCAB == 256
  assert (BOS_ID, EOS_ID, PAD_ID, VOCAB_SIZE) == (256, 257, 258, 259)


def test_encode_gives_utf8_bytes_as_int32():
  ids = tokenizer.encode("aé€")
  assert ids.dtype == np.int32
  np.testing.assert_array_equal(ids, list("aé€".encode("utf-8")))


def test_encode_with_bos_prepends_it():
  np.testing.assert_array_equal(tokenizer.encode("hi", add_bos=True), [BOS_ID, 104, 105])


def test_decode_round_trips_and_skips_specials():
  text = "def f(x):\n  return x  # ünïcode ✓"
  ids = tokenizer.encode(text)
  with_specials = np.concatenate([[BOS_ID], ids[:5], [EOS_ID, PAD_ID], ids[5:]])
  assert tokenizer.decode(ids) == text
  assert tokenizer.decode(with_specials) == text


def test_decode_replaces_invalid_utf8():
  euro = tokenizer.encode("€")
  assert tokenizer.decode(euro[:2]) == "\ufffd"


def test_decode_rejects_ids_outside_the_vocab():
  with pytest.raises(ValueError, match="259"):
    tokenizer.decode([65, VOCAB_SIZE])
  with pytest.raises(ValueError, match="must lie in"):
    tokenizer.decode([-1])


def test_token_byte_lengths_counts_bytes_only():
  ids = np.array([[0, 255, BOS_ID], [EOS_ID, PAD_ID, 65]])
  np.testing.assert_array_equal(tokenizer.token_byte_lengths(ids), [[1, 1, 0], [0, 0, 1]])
