"""Building command lines for the entry points in tests."""

from __future__ import annotations

from typing import Any


def config_overrides(section: str, values: dict[str, Any]) -> list[str]:
  """["--config.<section>.<field>=<value>", ...]: ml_collections' override flags."""
  return [f"--config.{section}.{name}={value}" for name, value in values.items()]
