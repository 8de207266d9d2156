"""`experiments.common`: an experiment config as the library's configs, the model
vocabulary following the data unless the config sets it (then checked against the data)."""

from __future__ import annotations

import pytest

from experiments import common
from experiments.configs import get_config
from sdm_jax.training.run_data import load_data


def _config(**data):
  config = get_config("swa_tiny")
  config.data.update(data)
  return config


def test_the_byte_tokenizer_fixes_the_vocabulary_without_reading_the_data(tmp_path):
  # The path does not exist: nothing is read to know that byte text has 259 ids.
  model, _, data = common.lm_configs(_config(path=str(tmp_path / "missing.txt")))
  assert model.vocab_size == 259 and data.tokenizer == "byte"


def test_an_unset_vocabulary_follows_the_data_and_a_set_one_must_hold_it(split_directory):
  config = _config(path=str(split_directory), tokenizer="none")
  data = load_data(common.data_config_of(config))
  assert common.lm_configs(config, data)[0].vocab_size == 1024
  assert common.lm_configs(config)[0].vocab_size == 1024  # loads the data to know
  config.model.vocab_size = 1001
  assert common.lm_configs(config, data)[0].vocab_size == 1001
  config.model.vocab_size = 1000
  with pytest.raises(ValueError, match="token id 1000, beyond model.vocab_size=1000"):
    common.lm_configs(config, data)


def test_a_vocabulary_smaller_than_the_tokenizer_is_refused(tmp_path):
  text = tmp_path / "a.txt"
  text.write_text("some text " * 50)
  config = _config(path=str(text))
  config.model.vocab_size = 258
  data = load_data(common.data_config_of(config))
  with pytest.raises(ValueError, match="model.vocab_size=258 is smaller than the 259 ids"):
    common.lm_configs(config, data)
