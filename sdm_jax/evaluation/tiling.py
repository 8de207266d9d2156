"""Kernel tilings from the command line: "default" or "field=int;field=int" over a
`NamedTuple` of a kernel family's tiling (`bench_ops --tilings`)."""

from __future__ import annotations

from typing import NamedTuple, TypeVar

Tiling = TypeVar("Tiling", bound=NamedTuple)


def parse_tiling(spec: str, default: Tiling) -> Tiling:
  """`default` for "default", else `default` with the fields named in spec overridden."""
  if spec == "default":
    return default
  fields = {}
  for item in spec.split(";"):
    name, _, value = item.partition("=")
    if name not in default._fields or not value.isdigit():
      raise ValueError(f"tiling items must be field=int with field in {default._fields}, "
                       f"got {item!r}")
    fields[name] = int(value)
  return default._replace(**fields)
