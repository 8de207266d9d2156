"""Writing train.bin / val.bin / token_bytes.npy: the split, the dtype, the table, and that
load_corpus reads back what was written (no tokenizer download: the byte tokenizer and a
stand-in word tokenizer)."""

from __future__ import annotations

import numpy as np
import pytest

from sdm_jax.data import corpus, token_bytes, token_files
from sdm_jax.data.tokenizer import BYTE_TOKEN_BYTES, BYTE_TOKENIZER


class WordTokenizer:
  """Words (and the spaces before them) as ids from a fixed list, past uint16's range:
  a stand-in for a BPE encoding with a large vocabulary."""

  name = "words"
  vocab_size = 70_001
  bos_id = 70_000

  def __init__(self, words):
    self._ids = {word: 65_000 + i for i, word in enumerate(words)}
    self._words = {i: word for word, i in self._ids.items()}

  def encode(self, text):
    return np.array([self._ids[word] for word in text.split(" ")], np.int32)

  def decode(self, ids):
    return " ".join(self._words[i] for i in ids)

  def token_bytes(self):
    return token_bytes.table_from_decoder(
        lambda i: self._words[i].encode() if i in self._words else None, self.vocab_size)


def _text_tree(root, count):
  for i in range(count):
    path = root / f"part{i % 4}" / f"doc{i:02d}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"def f{i}(x):\n  return 'ü{i}' * x\n" * (i % 3 + 1))
  (root / "blob.bin").write_bytes(bytes(range(256)))  # binary: skipped by both readers


def test_byte_tokenizer_on_a_directory_writes_load_corpus_streams(tmp_path):
  source, output = tmp_path / "texts", tmp_path / "tokens"
  _text_tree(source, 40)
  stats = token_files.write_token_corpus(token_files.text_file_documents([source]),
                                         BYTE_TOKENIZER, output, val_fraction=0.2)
  assert stats["token_dtype"] == "uint16" and stats["documents"]["val"] > 0
  for split in corpus.SPLITS:
    written = corpus.load_corpus(output, split=split, vocab_size=None)
    expected = corpus.load_corpus(source, split=split, val_fraction=0.2)
    np.testing.assert_array_equal(written, expected)
    assert stats["tokens"][split] == written.size
  np.testing.assert_array_equal(np.load(output / token_files.TOKEN_BYTES_FILE),
                                BYTE_TOKEN_BYTES)


def test_a_large_vocabulary_is_written_as_uint32_and_split_by_key(tmp_path):
  rng = np.random.default_rng(0)
  words = [f"w{i}" for i in range(50)]
  texts = {f"row{i}": " ".join(rng.choice(words, rng.integers(1, 9))) for i in range(60)}
  bpe = WordTokenizer(words)
  stats = token_files.write_token_corpus(texts.items(), bpe, tmp_path, val_fraction=0.3,
                                         num_threads=3)
  assert stats["token_dtype"] == "uint32"
  for split in corpus.SPLITS:
    keys = [key for key in texts if corpus.split_of(key, 0.3) == split]
    expected = np.concatenate([[bpe.bos_id, *bpe.encode(texts[key])] for key in keys])
    written = corpus.load_corpus(tmp_path, split=split, vocab_size=None, token_dtype="uint32")
    np.testing.assert_array_equal(written, expected)
    assert stats["documents"][split] == len(keys)
  table = token_bytes.load_table(tmp_path / token_files.TOKEN_BYTES_FILE)
  assert table[bpe.bos_id] == 0 and table[bpe.encode("w12")[0]] == 3


def test_max_tokens_stops_after_the_document_that_reaches_it(tmp_path):
  texts = [(f"doc{i}", "a b c") for i in range(100)]  # 4 tokens per document with BOS
  stats = token_files.write_token_corpus(texts, WordTokenizer(["a", "b", "c"]), tmp_path,
                                         val_fraction=0.5, max_tokens=30)
  assert sum(stats["tokens"].values()) == 32 and sum(stats["documents"].values()) == 8


def test_write_errors_leave_no_corpus(tmp_path):
  one = [("only", "a b")]
  with pytest.raises(ValueError, match="received no document"):
    token_files.write_token_corpus(one, WordTokenizer(["a", "b"]), tmp_path, val_fraction=0.1)
  assert not list(tmp_path.iterdir())  # neither the files nor their partial versions
  (tmp_path / "val.bin").write_bytes(b"")
  with pytest.raises(ValueError, match="already exists"):
    token_files.write_token_corpus(one, BYTE_TOKENIZER, tmp_path, val_fraction=0.1)
  with pytest.raises(ValueError, match="val_fraction"):
    token_files.write_token_corpus(one, BYTE_TOKENIZER, tmp_path / "x", val_fraction=1.0)
  with pytest.raises(ValueError, match="neither a file nor a directory"):
    list(token_files.text_file_documents([tmp_path / "missing"]))


@pytest.mark.parametrize("vocab_size, dtype", [(259, "uint16"), (65_536, "uint16"),
                                               (65_537, "uint32"), (200_019, "uint32")])
def test_token_dtype_for_is_the_smallest_that_holds_the_ids(vocab_size, dtype):
  assert token_files.token_dtype_for(vocab_size) == dtype
