"""`sdm_jax.training.run_data`: a data config's splits with their tokenizer and bytes per
token, the vocabulary they imply, and the checks made before anything trains."""

from __future__ import annotations

import numpy as np
import pytest

from sdm_jax.data.tokenizer import BYTE_TOKEN_BYTES
from sdm_jax.training.config import DataConfig
from sdm_jax.training.run_data import data_vocab_size, load_data


def test_the_byte_tokenizer_fixes_the_vocabulary_without_reading_the_data(tmp_path):
  # The path does not exist: nothing is read to know that byte text has 259 ids.
  assert data_vocab_size(DataConfig(path=str(tmp_path / "missing.txt"))) == 259


def test_ids_without_a_tokenizer_set_the_vocabulary_from_their_largest_id(split_directory):
  config = DataConfig(path=str(split_directory), tokenizer="none")
  data = load_data(config)
  assert (data.max_id, data.tokenizer, data.token_bytes) == (1000, None, None)
  assert data_vocab_size(config, data) == 1024
  assert data_vocab_size(config) == 1024  # loads the data to know


def test_load_data_takes_the_table_from_the_file_or_the_tokenizer(split_directory, tmp_path):
  table = np.random.default_rng(1).integers(0, 5, 1001)
  np.save(tmp_path / "bytes.npy", table)
  data = load_data(DataConfig(path=str(split_directory), tokenizer="none",
                              token_bytes=str(tmp_path / "bytes.npy")))
  np.testing.assert_array_equal(data.token_bytes, table)
  text = tmp_path / "a.txt"
  text.write_text("some text " * 50)
  byte = load_data(DataConfig(path=str(text)))
  np.testing.assert_array_equal(byte.token_bytes, BYTE_TOKEN_BYTES)


@pytest.mark.parametrize("data, message", [
    (dict(tokenizer="none"), "is text, which is read with the byte tokenizer"),
    (dict(tokenizer="byte", path="{split}"), "beyond the 259 ids of data.tokenizer='byte'"),
    (dict(tokenizer="none", path="{split}", token_bytes="{table}"), "only 10 entries"),
    (dict(token_dtype="int8"), "token_dtype must be one of"),
    (dict(token_bytes="bytes.txt"), "must be a .npy file"),
])
def test_data_that_does_not_fit_its_settings_is_refused(split_directory, tmp_path, data,
                                                        message):
  np.save(tmp_path / "short.npy", np.ones(10, np.int32))
  text = tmp_path / "a.txt"
  text.write_text("some text " * 50)
  values = {"path": str(text), **data}
  values = {k: v.format(split=split_directory, table=tmp_path / "short.npy")
            if isinstance(v, str) else v for k, v in values.items()}
  with pytest.raises(ValueError, match=message):
    load_data(DataConfig(**values))
