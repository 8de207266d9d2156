"""Kernel tilings named on the command line (`bench_ops --tilings`): "default" or
"field=value;field=value" overriding fields of a kernel family's config (a NamedTuple)."""

from __future__ import annotations

from typing import NamedTuple, TypeVar

Config = TypeVar("Config", bound=NamedTuple)


def parse_tiling(spec: str, default: Config) -> Config:
  """`default` with the fields `spec` names replaced; each value read as the type of the
  default's field (an int, or a name for a str field; for a field whose default is None,
  an int if it is digits). The kernel checks the values."""
  if spec == "default":
    return default
  fields = {}
  for item in spec.split(";"):
    name, _, value = item.partition("=")
    kind = type(getattr(default, name, None))
    if name not in default._fields or not value or (kind is int and not value.isdigit()):
      raise ValueError(f"tiling items must be field=value with field in {default._fields} "
                       f"(an int where the default is one), got {item!r}")
    as_int = kind is int or (kind is type(None) and value.isdigit())
    fields[name] = int(value) if as_int else value
  return default._replace(**fields)
