from __future__ import annotations

import sys

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


# The Tokenizer interface.


def test_byte_tokenizer_is_the_module_functions_behind_the_interface():
  byte = tokenizer.tokenizer_named("byte")
  assert byte is tokenizer.BYTE_TOKENIZER
  assert (byte.vocab_size, byte.bos_id) == (VOCAB_SIZE, BOS_ID)
  text = "naïve → ok"
  np.testing.assert_array_equal(byte.encode(text), tokenizer.encode(text))
  ids = np.concatenate([[BOS_ID], byte.encode(text), [EOS_ID]])
  assert byte.decode(ids) == tokenizer.decode(ids) == text
  np.testing.assert_array_equal(byte.token_bytes(),
                                tokenizer.token_byte_lengths(np.arange(VOCAB_SIZE)))


def test_byte_tokenizer_decodes_ids_past_its_vocabulary_as_replacement_characters():
  # A model vocabulary padded past 259 can sample those ids; they must not crash a sample.
  assert tokenizer.BYTE_TOKENIZER.decode([104, 300, 105, VOCAB_SIZE]) == "h\ufffdi\ufffd"
  with pytest.raises(ValueError, match="non-negative"):
    tokenizer.BYTE_TOKENIZER.decode([-1])


def test_tokenizer_named_none_and_bad_names():
  assert tokenizer.tokenizer_named(tokenizer.NO_TOKENIZER) is None
  with pytest.raises(ValueError, match="tokenizer must be"):
    tokenizer.tokenizer_named("")


def test_a_tiktoken_name_without_tiktoken_is_a_clear_error(monkeypatch):
  monkeypatch.setitem(sys.modules, "tiktoken", None)  # import fails
  with pytest.raises(ValueError, match=r"tiktoken is not installed: pip install .*tiktoken"):
    tokenizer.tokenizer_named("gpt2")


class _SizedTokenizer:
  name = "bpe"
  bos_id = 0

  def __init__(self, vocab_size):
    self.vocab_size = vocab_size


@pytest.mark.parametrize("tokenizer_size, max_id, expected", [
    (50_257, None, 50_304), (50_304, 7, 50_304), (65, None, 128), (None, 0, 64),
    (None, 63, 64), (None, 64, 128), (None, 50_256, 50_304)])
def test_model_vocab_size_rounds_up_to_a_multiple_of_64(tokenizer_size, max_id, expected):
  sized = None if tokenizer_size is None else _SizedTokenizer(tokenizer_size)
  assert tokenizer.model_vocab_size(sized, max_id) == expected


def test_model_vocab_size_keeps_the_byte_tokenizer_exact():
  assert tokenizer.model_vocab_size(tokenizer.BYTE_TOKENIZER, 10_000) == VOCAB_SIZE
  with pytest.raises(ValueError, match="max_id"):
    tokenizer.model_vocab_size(None)


def test_a_prompt_starts_with_bos_then_the_text():
  assert tokenizer.prompt_ids(tokenizer.BYTE_TOKENIZER, "hé") == [BOS_ID, 104, 195, 169]


def test_a_sample_prints_as_text_with_a_tokenizer_and_as_ids_without():
  rng = np.random.default_rng(0)
  prompt = [BOS_ID, *rng.integers(97, 123, 5).tolist()]
  sample = rng.integers(97, 123, 7).tolist()
  byte = tokenizer.BYTE_TOKENIZER
  decoded = tokenizer.decode(prompt) + tokenizer.decode(sample)  # BOS prints as nothing
  assert tokenizer.sample_text(byte, prompt, sample) == decoded
  # The prompt as the user typed it stands in for its decoding.
  assert tokenizer.sample_text(byte, prompt, sample, "typed") == "typed" + tokenizer.decode(sample)
  assert tokenizer.sample_text(None, prompt, sample) == " ".join(map(str, prompt + sample))
