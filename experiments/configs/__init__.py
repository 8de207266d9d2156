"""Experiment configs: `experiments/configs/<name>.py`, each with a `get_config()`.

The CLIs load one with ml_collections' config-file flag,
`--config=experiments/configs/<name>.py`, and `--config.train.steps=10` (any field)
overrides it; `experiments.compare` takes several by name (`--configs=gdn_small,sdm_small`).
"""

from __future__ import annotations

import importlib
import pathlib

from ml_collections import config_dict

_HERE = pathlib.Path(__file__).parent
# base: helpers; recall_sweep: the recall sweep's settings, not an experiment config.
_NOT_CONFIGS = {"__init__", "base", "recall_sweep"}


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
