"""Kernel tilings named on the command line (`bench_ops --tilings`): "default" or
"field=value;field=value" overriding fields of a kernel family's config (a NamedTuple)."""

from __future__ import annotations

from typing import NamedTuple, TypeVar

Config = TypeVar("Config", bound=NamedTuple)
_BOOLS = {"true": True, "false": False}


def parse_tiling(spec: str, default: Config) -> Config:
  """`default` with the fields `spec` names replaced; each value read as the type of the
  default's field (an int; "true" or "false" for a bool field; a name for a str field; for a
  field whose default is None, an int if it is digits). The kernel checks the values."""
  if spec == "default":
    return default
  fields = {}
  for item in spec.split(";"):
    name, _, value = item.partition("=")
    kind = type(getattr(default, name, None))
    if (name not in default._fields or not value or (kind is int and not value.isdigit())
        or (kind is bool and value not in _BOOLS)):
      raise ValueError(f"tiling items must be field=value with field in {default._fields} "
                       f"(an int where the default is one, true or false where it is a "
                       f"bool), got {item!r}")
    if kind is bool:  # before int: bool is a subclass of int, and "false" is a truthy str
      fields[name] = _BOOLS[value]
    elif kind is int or (kind is type(None) and value.isdigit()):
      fields[name] = int(value)
    else:
      fields[name] = value
  return default._replace(**fields)
