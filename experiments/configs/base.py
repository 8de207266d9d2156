"""Shared pieces of the named configs: each config is a ConfigDict with sections
`model` (LMConfig fields), `train` (TrainConfig fields) and `data` (DataConfig fields)."""

from __future__ import annotations

import dataclasses

from ml_collections import config_dict

from maglev_jax.config import MaglevConfig
from sdm_jax.models.config import LMConfig
from sdm_jax.training.config import DataConfig, TrainConfig


_OPTIONAL_TYPES = {"int | None": int, "float | None": float, "str | None": str}


def _defaults(cls) -> dict:
  """Every field's default; None defaults become typed placeholders so that
  `--config.<section>.<field>=value` can still set them from the command line."""
  instance = cls()
  values = {}
  for field in dataclasses.fields(cls):
    value = getattr(instance, field.name)
    if value is None:
      value = config_dict.placeholder(_OPTIONAL_TYPES[field.type])
    values[field.name] = value
  return values


def _experiment_config(name: str, kind: str, model_class, model_overrides: dict
                       ) -> config_dict.ConfigDict:
  # vocab_size is left unset: it follows the data (`experiments.common.lm_configs`).
  model = {**_defaults(model_class), "vocab_size": config_dict.placeholder(int),
           **model_overrides}
  return config_dict.ConfigDict({
      "name": name,
      "kind": kind,
      "model": model,
      "train": _defaults(TrainConfig),
      "data": _defaults(DataConfig),
  }, type_safe=False)


def lm_config(name: str, **model_overrides) -> config_dict.ConfigDict:
  """A config with every LMConfig/TrainConfig/DataConfig field present (so every field can
  be overridden from the command line) and the given model fields changed."""
  return _experiment_config(name, "lm", LMConfig, model_overrides)


def maglev_config(name: str, **model_overrides) -> config_dict.ConfigDict:
  """`lm_config` for a Maglev model: kind "maglev", model fields of MaglevConfig."""
  return _experiment_config(name, "maglev", MaglevConfig, model_overrides)


def maglev_baseline(name: str, maglev: config_dict.ConfigDict,
                    pattern: str) -> config_dict.ConfigDict:
  """An LM baseline of a Maglev config: the decoder's sizes and window, the same training
  and data, another layer pattern ("S": SWA, "SA": SLSL)."""
  lm_fields = {field.name for field in dataclasses.fields(LMConfig)}
  # None values are left to lm_config's typed placeholders (settable from the command line).
  model = {k: v for k, v in maglev.model.items() if k in lm_fields and v is not None}
  config = lm_config(name, **{**model, "pattern": pattern})
  for section in ("train", "data"):
    config[section].update({k: v for k, v in maglev[section].items() if v is not None})
  return config


def maglev_shared_variant(name: str, maglev: config_dict.ConfigDict) -> config_dict.ConfigDict:
  """A Maglev config with Q and P sharing their blocks and lambda = 0.1 (the paper's shared
  setting), everything else unchanged."""
  maglev.name = name
  maglev.model.update(sharing="shared", memory_loss_weight=0.1)
  return maglev
