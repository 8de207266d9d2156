"""Experiment configs: `experiments/configs/<name>.py`, each with a `get_config()`.

The CLIs load one with ml_collections' config-file flag,
`--config=experiments/configs/<name>.py`, and `--config.train.steps=10` (any field)
overrides it; `experiments.compare` takes several by name (`--configs=gdn_small,sdm_small`),
`experiments.maglev_compare` a Maglev family of one size (`maglev_config_names`).
"""

from __future__ import annotations

import importlib
import pathlib
from typing import Sequence

from ml_collections import config_dict

_HERE = pathlib.Path(__file__).parent
# base: helpers; recall_sweep, maglev_study: settings of a sweep / study, not experiment
# configs.
_NOT_CONFIGS = {"__init__", "base", "recall_sweep", "maglev_study"}
# The Maglev family of one size: two baselines and Maglev with separate and shared blocks.
MAGLEV_MODELS = ("swa", "slsl", "maglev", "maglev_shared")


def known_configs() -> list[str]:
  return sorted(p.stem for p in _HERE.glob("*.py") if p.stem not in _NOT_CONFIGS)


def config_path(name: str) -> str:
  """The file of the named config (what `--config=` takes)."""
  return str(_HERE / f"{name}.py")


def get_config(name: str) -> config_dict.ConfigDict:
  """The named config; ValueError listing the known names otherwise."""
  if name not in known_configs():
    raise ValueError(f"unknown config {name!r}; known configs: {', '.join(known_configs())}")
  return importlib.import_module(f"experiments.configs.{name}").get_config()


def maglev_config_names(size: str, models: Sequence[str]) -> list[str]:
  """The configs of `models` in the Maglev family of `size`: "maglev" -> maglev_<size>,
  "maglev_shared" -> maglev_<size>_shared, "swa" -> maglev_<size>_swa, "slsl" ->
  maglev_<size>_slsl. ValueError unless `models` is a non-empty subset of MAGLEV_MODELS."""
  unknown = sorted(set(models) - set(MAGLEV_MODELS))
  if unknown or not models:
    raise ValueError(f"models must be a non-empty subset of {MAGLEV_MODELS}, got "
                     f"{list(models)}")
  names = []
  for model in models:
    suffix = model.removeprefix("maglev").lstrip("_")
    names.append(f"maglev_{size}_{suffix}" if suffix else f"maglev_{size}")
  return names
