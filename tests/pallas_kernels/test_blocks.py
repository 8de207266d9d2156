"""Block-size helpers: the power-of-two rule every kernel's shape checks share."""

from __future__ import annotations

from pallas_kernels.blocks import is_power_of_two, next_power_of_two


def test_powers_of_two():
  assert [n for n in range(-4, 70) if is_power_of_two(n)] == [1, 2, 4, 8, 16, 32, 64]
  assert [next_power_of_two(n) for n in (-3, 0, 1, 2, 3, 16, 17, 1000)] == [
      1, 1, 1, 2, 4, 16, 32, 1024]
