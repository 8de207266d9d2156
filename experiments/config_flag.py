"""`--config=NAME` for the entry points, with ml_collections' `--config.<field>=` overrides.

NAME is one of `experiments.configs.known_configs()`, or a path to a `.py` file with a
`get_config()` (the plain ml_collections convention).
"""

from __future__ import annotations

from absl import flags
from ml_collections.config_flags import config_flags as config_flags_lib

from experiments import configs


class _NamedConfigParser(config_flags_lib.ConfigFileFlagParser):
  """Resolves a config name first, then falls back to a config file path."""

  def parse(self, argument):
    if isinstance(argument, str) and not argument.endswith(".py") and ":" not in argument:
      return configs.get_config(argument)  # ValueError names the known configs.
    return super().parse(argument)


def define_config_flag(default: str, name: str = "config") -> flags.FlagHolder:
  """Defines `--config` (a config name or file) with `--config.<field>=` overrides."""
  flag = config_flags_lib._ConfigFlag(  # pylint: disable=protected-access
      parser=_NamedConfigParser(name=name, lock_config=False),
      serializer=flags.ArgumentSerializer(), name=name, default=default,
      help_string=f"config name ({', '.join(configs.known_configs())}) or a .py file path",
      flag_values=flags.FLAGS)
  return flags.DEFINE_flag(flag, flags.FLAGS)
