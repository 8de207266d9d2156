"""One resolver for every op's `impl` argument.

Each op lists its implementations (`impls`); "auto" picks the op's Pallas kernel on a GPU
when the op has one and it can take the inputs, and the op's fast XLA path otherwise. Any
other listed value is itself ("pallas" off GPU runs the kernel in interpret mode: for
tests). Invalid values raise a ValueError that lists the allowed ones.
"""

from __future__ import annotations

from typing import Callable

from pallas_kernels import platform


def resolve_impl(impl: str, impls: tuple[str, ...], *, xla: str,
                 pallas_unsupported: Callable[[], str | None] | None = None) -> str:
  """The implementation that `impl` runs.

  Args:
    impl: the caller's choice.
    impls: the op's implementations, "auto" included.
    xla: what "auto" runs when it does not run the kernel.
    pallas_unsupported: for ops with a kernel, returns why the kernel cannot take these
      inputs (None if it can); evaluated only when "auto" is on a GPU.
  """
  if impl not in impls:
    raise ValueError(f"impl must be one of {impls}, got {impl!r}")
  if impl != "auto":
    return impl
  if "pallas" in impls and platform.on_gpu() and (
      pallas_unsupported is None or pallas_unsupported() is None):
    return "pallas"
  return xla
