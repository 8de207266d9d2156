"""What the entry points share: the `--config` flag, turning a ConfigDict into the
library's configs (the model vocabulary following the data, `sdm_jax.training.run_data`),
named configs into the runs of an equal-tokens comparison (`build_runs`), and the default
workdir."""

from __future__ import annotations

import os
from typing import Any, Sequence

from absl import flags
from ml_collections import config_dict
from ml_collections import config_flags

from experiments import cli
from experiments import configs
from maglev_jax import equal_tokens
from maglev_jax import model_kinds
from sdm_jax.models.config import LMConfig
from sdm_jax.training.config import DataConfig, TrainConfig
from sdm_jax.training.run_data import Data, data_vocab_size, load_data

DEFAULT_WORKDIR_ROOT = "workdirs"


def define_config_flag(default: str, arg: str | None = None,
                       help_string: str = "Experiment config file, e.g. "
                       "experiments/configs/sdm_small.py.",
                       accept_new_attributes: bool = False) -> flags.FlagHolder:
  """`--config=<file>.py[:arg]` (ml_collections' config file flag: the file's
  `get_config(arg)`), defaulting to `experiments/configs/<default>.py[:arg]`, with
  `--config.<field>=value` overrides. Read it with `loaded_config`.

  accept_new_attributes: overrides may add fields the file does not hold (for sections
  of free overrides; the caller then checks the fields it knows)."""
  path = configs.config_path(default) + (f":{arg}" if arg is not None else "")
  return cli.define_config(config_flags.DEFINE_config_file, "config", default=path,
                           help_string=help_string,
                           lock_config=not accept_new_attributes,
                           accept_new_attributes=accept_new_attributes)


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


def data_config_of(config: config_dict.ConfigDict) -> DataConfig:
  """The data settings of an experiment config."""
  return DataConfig.from_dict(to_plain(config.data))


def lm_configs(config: config_dict.ConfigDict, data: Data | None = None
               ) -> tuple[LMConfig, TrainConfig, DataConfig]:
  """The model, training and data settings of an experiment config (ValueErrors name the
  offending field). The model config's class is the one of `config.kind` (default "lm"):
  LMConfig or a subclass such as MaglevConfig.

  model.vocab_size follows the data when the config leaves it unset (`data_vocab_size`).
  `data`, the loaded data of config.data, is checked against an explicit vocab_size: its
  ids and its tokenizer's must fit, so a mismatch fails before anything trains.
  """
  model_class = model_kinds.kind_named(config.get("kind", "lm")).config_class
  data_config = data_config_of(config)
  model = to_plain(config.model)
  if model.get("vocab_size") is None:
    model["vocab_size"] = data_vocab_size(data_config, data)
  elif data is not None:
    vocab_size = model["vocab_size"]
    if data.max_id >= vocab_size:
      raise ValueError(f"the data holds token id {data.max_id}, beyond model.vocab_size="
                       f"{vocab_size}; raise model.vocab_size above {data.max_id} or leave it "
                       f"unset to follow the data")
    if data.tokenizer is not None and data.tokenizer.vocab_size > vocab_size:
      raise ValueError(f"model.vocab_size={vocab_size} is smaller than the "
                       f"{data.tokenizer.vocab_size} ids of data.tokenizer="
                       f"{data.tokenizer.name!r}; raise it or leave it unset to follow the data")
  return (model_class.from_dict(model), TrainConfig.from_dict(to_plain(config.train)),
          data_config)


def override_steps(config: config_dict.ConfigDict, steps: int | None) -> None:
  """Applies a `--steps` flag: train.steps = steps, with the warmup cut to fit in it."""
  if steps is not None:
    config.train.steps = steps
    config.train.warmup_steps = min(config.train.warmup_steps, steps)


def build_runs(config_names: Sequence[str], *, steps: int | None = None,
               model_overrides: dict[str, Any] | None = None,
               train_overrides: dict[str, Any] | None = None,
               data_overrides: dict[str, Any] | None = None
               ) -> tuple[dict[str, equal_tokens.Run], Data]:
  """({config name: Run}, the data they share) for `maglev_jax.equal_tokens.compare`, with
  the overrides applied to every config. The data is loaded once, after the checks; model
  vocabularies left unset follow it.

  Raises:
    ValueError: no or repeated names, or configs that would not train on equal tokens of
      the same data and evaluate on the same targets.
  """
  if not config_names or len(set(config_names)) != len(config_names):
    raise ValueError(f"configs must be a non-empty list of distinct config names, got "
                     f"{list(config_names)}")
  experiment_configs = {}
  for name in config_names:
    config = configs.get_config(name)
    config.model.update(model_overrides or {})
    config.train.update(train_overrides or {})
    config.data.update(data_overrides or {})
    if steps is not None:
      config.train.update(steps=steps, checkpoint_every=steps)
      override_steps(config, steps)
    experiment_configs[config.name] = config
  data_config = equal_tokens.check_equal_tokens(
      (TrainConfig.from_dict(to_plain(config.train)), data_config_of(config))
      for config in experiment_configs.values())
  data = load_data(data_config)
  runs = {name: equal_tokens.Run(model_kinds.kind_named(config.kind), *lm_configs(config, data))
          for name, config in experiment_configs.items()}
  return runs, data


def default_workdir(config_name: str) -> str:
  return os.path.join(DEFAULT_WORKDIR_ROOT, config_name)

