"""`experiments.common`: what the data implies for the model (vocabulary, tokenizer, bytes
per token) and the checks made before anything trains."""

from __future__ import annotations

import numpy as np
import pytest

from experiments import common
from experiments.configs import get_config
from sdm_jax.data.tokenizer import BYTE_TOKEN_BYTES


def _config(**data):
  config = get_config("swa_tiny")
  config.data.update(data)
  return config


@pytest.fixture
def split_directory(tmp_path):
  rng = np.random.default_rng(0)
  rng.integers(0, 1000, 500).astype("<u2").tofile(tmp_path / "train.bin")
  val = rng.integers(0, 1000, 100).astype("<u2")
  val[7] = 1000  # the largest id is in val
  val.tofile(tmp_path / "val.bin")
  return tmp_path


def test_the_byte_tokenizer_fixes_the_vocabulary_without_reading_the_data(tmp_path):
  # The path does not exist: nothing is read to know that byte text has 259 ids.
  model, _, data = common.lm_configs(_config(path=str(tmp_path / "missing.txt")))
  assert model.vocab_size == 259 and data.tokenizer == "byte"


def test_ids_without_a_tokenizer_set_the_vocabulary_from_their_largest_id(split_directory):
  config = _config(path=str(split_directory), tokenizer="none")
  data = common.load_data(common.data_config_of(config))
  assert (data.max_id, data.tokenizer, data.token_bytes) == (1000, None, None)
  assert common.lm_configs(config, data)[0].vocab_size == 1024
  assert common.lm_configs(config)[0].vocab_size == 1024  # loads the data to know
  config.model.vocab_size = 1001
  assert common.lm_configs(config, data)[0].vocab_size == 1001
  config.model.vocab_size = 1000
  with pytest.raises(ValueError, match="token id 1000, beyond model.vocab_size=1000"):
    common.lm_configs(config, data)


def test_load_data_takes_the_table_from_the_file_or_the_tokenizer(split_directory, tmp_path):
  table = np.random.default_rng(1).integers(0, 5, 1001)
  np.save(tmp_path / "bytes.npy", table)
  data = common.load_data(common.data_config_of(_config(
      path=str(split_directory), tokenizer="none", token_bytes=str(tmp_path / "bytes.npy"))))
  np.testing.assert_array_equal(data.token_bytes, table)
  text = tmp_path / "a.txt"
  text.write_text("some text " * 50)
  byte = common.load_data(common.data_config_of(_config(path=str(text))))
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
    common.load_data(common.data_config_of(_config(**values)))
