"""Block sizes: every block a Triton kernel loads or stores has a power-of-two size, so
shapes are padded up to one."""

from __future__ import annotations


def is_power_of_two(n: int) -> bool:
  """Whether n is 1, 2, 4, 8, ... (False for n < 1)."""
  return n >= 1 and not n & (n - 1)


def check_power_of_two_fields(config, names, *, allow_none: bool = False,
                              allow_zero: bool = False) -> None:
  """Raises ValueError naming the first of `names` whose value in the kernel config (a
  NamedTuple) is not an int power of two (or None, with allow_none; or 0, "off", with
  allow_zero)."""
  for name in names:
    value = getattr(config, name)
    if (allow_none and value is None) or (allow_zero and isinstance(value, int)
                                          and value == 0):
      continue
    if not isinstance(value, int) or not is_power_of_two(value):
      allowed = " or ".join([word for word, allowed in (("None", allow_none), ("0", allow_zero))
                             if allowed] + ["a power of two"])
      raise ValueError(f"KernelConfig.{name} must be {allowed} >= 1, got {value!r}")


def next_power_of_two(n: int) -> int:
  """The smallest power of two >= n (1 for n <= 1)."""
  return 1 << max(n - 1, 0).bit_length()
