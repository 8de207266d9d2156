"""Block-size helpers: the power-of-two rule every kernel's shape checks share."""

from __future__ import annotations

from typing import NamedTuple

import pytest

from pallas_kernels.blocks import check_power_of_two_fields, is_power_of_two, next_power_of_two


def test_powers_of_two():
  assert [n for n in range(-4, 70) if is_power_of_two(n)] == [1, 2, 4, 8, 16, 32, 64]
  assert [next_power_of_two(n) for n in (-3, 0, 1, 2, 3, 16, 17, 1000)] == [
      1, 1, 1, 2, 4, 16, 32, 1024]


def test_power_of_two_fields_name_the_first_bad_one():
  class Config(NamedTuple):
    warps: int = 4
    rows: int = 3
  check_power_of_two_fields(Config(), ("warps",))
  for config, name in ((Config(), "rows"), (Config(warps=0), "warps"),
                       (Config(warps=4.0), "warps")):
    with pytest.raises(ValueError, match=f"KernelConfig.{name} must be a power of two"):
      check_power_of_two_fields(config, ("warps", "rows"))


def test_optional_power_of_two_fields_take_none():
  class Config(NamedTuple):
    cols: int | None = None
    warps: int | None = 3
  check_power_of_two_fields(Config(warps=8), ("cols", "warps"), allow_none=True)
  with pytest.raises(ValueError, match="KernelConfig.warps must be None or a power of two"):
    check_power_of_two_fields(Config(), ("cols", "warps"), allow_none=True)
  with pytest.raises(ValueError, match="KernelConfig.cols must be a power of two"):
    check_power_of_two_fields(Config(warps=8), ("cols",))  # None only where allowed


def test_power_of_two_fields_that_may_be_off_take_zero():
  class Config(NamedTuple):
    lanes: int = 0
    chunk: int = 4
  check_power_of_two_fields(Config(), ("lanes", "chunk"), allow_zero=True)
  for config, name in ((Config(lanes=-16), "lanes"), (Config(chunk=3), "chunk")):
    with pytest.raises(ValueError, match=f"KernelConfig.{name} must be 0 or a power of two"):
      check_power_of_two_fields(config, ("lanes", "chunk"), allow_zero=True)
  with pytest.raises(ValueError, match="KernelConfig.lanes must be a power of two"):
    check_power_of_two_fields(Config(), ("lanes",))  # 0 only where allowed
