"""What the entry points share: the `--config` flag, turning a ConfigDict into the
library's configs, loading the data it names, and the default workdir."""

from __future__ import annotations

import os
from typing import Any

from absl import flags
import numpy as np
from ml_collections import config_dict
from ml_collections import config_flags

from experiments import cli
from experiments import configs
from experiments import model_kinds
from sdm_jax.data.corpus import load_corpus
from sdm_jax.models.config import LMConfig
from sdm_jax.training.config import DataConfig, TrainConfig

DEFAULT_WORKDIR_ROOT = "workdirs"


def define_config_flag(default: str, arg: str | None = None,
                       help_string: str = "Experiment config file, e.g. "
                       "experiments/configs/sdm_small.py.") -> flags.FlagHolder:
  """`--config=<file>.py[:arg]` (ml_collections' config file flag: the file's
  `get_config(arg)`), defaulting to `experiments/configs/<default>.py[:arg]`, with
  `--config.<field>=value` overrides. Read it with `loaded_config`."""
  path = configs.config_path(default) + (f":{arg}" if arg is not None else "")
  return cli.define_config(config_flags.DEFINE_config_file, "config", default=path,
                           help_string=help_string)


def loaded_config(flag: flags.FlagHolder) -> config_dict.ConfigDict:
  """The config of a `define_config_flag` flag; ValueError naming the known configs when
  its file could not be loaded (ml_collections defers that error to the first access)."""
  config = flag.value
  try:
    config.get("name")
  except IOError:
    known = ", ".join(configs.known_configs())
    raise ValueError(f"--config: cannot load {flags.FLAGS[flag.name].serialize()!r}; "
                     f"give a config file, experiments/configs/<name>.py with one of the known "
                     f"configs: {known}") from None
  return config


def to_plain(config: config_dict.ConfigDict | dict[str, Any]) -> dict[str, Any]:
  return config.to_dict() if isinstance(config, config_dict.ConfigDict) else dict(config)


def lm_configs(config: config_dict.ConfigDict) -> tuple[LMConfig, TrainConfig, DataConfig]:
  """The model, training and data settings of an experiment config (ValueErrors name the
  offending field). The model config's class is the one of `config.kind` (default "lm"):
  LMConfig or a subclass such as MaglevConfig."""
  model_class = model_kinds.kind_named(config.get("kind", "lm")).config_class
  return (model_class.from_dict(to_plain(config.model)),
          TrainConfig.from_dict(to_plain(config.train)),
          DataConfig.from_dict(to_plain(config.data)))


def override_steps(config: config_dict.ConfigDict, steps: int | None) -> None:
  """Applies a `--steps` flag: train.steps = steps, with the warmup cut to fit in it."""
  if steps is not None:
    config.train.steps = steps
    config.train.warmup_steps = min(config.train.warmup_steps, steps)


def default_workdir(config_name: str) -> str:
  return os.path.join(DEFAULT_WORKDIR_ROOT, config_name)


def load_splits(data: DataConfig, vocab_size: int) -> tuple[np.ndarray, np.ndarray]:
  """(train, val) token streams of the data config."""
  train = load_corpus(data.path, split="train", val_fraction=data.val_fraction,
                      max_bytes=data.max_train_bytes, vocab_size=vocab_size)
  val = load_corpus(data.path, split="val", val_fraction=data.val_fraction,
                    vocab_size=vocab_size)
  return train, val
