"""Named experiment configs: `experiments/configs/<name>.py` with a `get_config()`.

`--config=NAME` on the CLIs loads one; `--config.train.steps=10` (any field) overrides it.
"""

from __future__ import annotations

import importlib
import pathlib

from ml_collections import config_dict

_HERE = pathlib.Path(__file__).parent
_NOT_CONFIGS = {"__init__", "base"}


def known_configs() -> list[str]:
  return sorted(p.stem for p in _HERE.glob("*.py") if p.stem not in _NOT_CONFIGS)


def get_config(name: str) -> config_dict.ConfigDict:
  """The named config; ValueError listing the known names otherwise."""
  if name not in known_configs():
    raise ValueError(f"unknown config {name!r}; known configs: {', '.join(known_configs())}")
  return importlib.import_module(f"experiments.configs.{name}").get_config()
