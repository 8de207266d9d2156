"""Shared pieces of the named configs: each config is a ConfigDict with sections
`model` (LMConfig fields), `train` (TrainConfig fields) and `data` (DataConfig fields)."""

from __future__ import annotations

import dataclasses

from ml_collections import config_dict

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


def lm_config(name: str, **model_overrides) -> config_dict.ConfigDict:
  """A config with every LMConfig/TrainConfig/DataConfig field present (so every field can
  be overridden from the command line) and the given model fields changed."""
  model = {**_defaults(LMConfig), **model_overrides}
  return config_dict.ConfigDict({
      "name": name,
      "kind": "lm",
      "model": model,
      "train": _defaults(TrainConfig),
      "data": _defaults(DataConfig),
  }, type_safe=False)
