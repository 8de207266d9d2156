"""Kernel tilings named on the command line (`bench_ops --tilings`): "default" or
"field=value;field=value" overriding fields of a kernel family's config (a NamedTuple)."""

from __future__ import annotations

from typing import NamedTuple, TypeVar

Config = TypeVar("Config", bound=NamedTuple)


_BOOLS = {"true": True, "false": False}


def parse_tiling(spec: str, default: Config) -> Config:
  """`default` with the fields `spec` names replaced; each value read as the type of the
  default's field (an int, true / false for a bool, or a name for a str field). The kernel
  checks the values."""
  if spec == "default":
    return default
  fields = {}
  for item in spec.split(";"):
    name, _, value = item.partition("=")
    kind = type(getattr(default, name, None))
    if (name not in default._fields or not value or (kind is int and not value.isdigit())
        or (kind is bool and value.lower() not in _BOOLS)):
      raise ValueError(f"tiling items must be field=value with field in {default._fields} "
                       f"(an int where the default is one, true or false for a bool), "
                       f"got {item!r}")
    fields[name] = (int(value) if kind is int else _BOOLS[value.lower()] if kind is bool
                    else value)
  return default._replace(**fields)
