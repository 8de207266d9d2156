"""One resolver for every op's `impl` argument.

Each op lists its implementations (`impls`). Ops with Pallas kernels list the three
kernel choices `PALLAS_IMPLS`:

- "pallas": the kernel family of the platform this runs on (`kernel_family`): the TPU
  kernels on a TPU, the GPU kernels everywhere else (interpret mode off GPU: for tests);
- "pallas_gpu" / "pallas_tpu": that family wherever this runs, compiled on its own platform
  and interpreted elsewhere (`interpret=True` for the GPU kernels, TPU interpret mode for
  the TPU kernels), so a CPU can test both against the XLA path.

"auto" picks the op's GPU kernel on a GPU when the kernel can take the inputs (and, for
some ops, was measured faster), and the op's fast XLA path otherwise, TPUs included: the
TPU kernels have never run on a TPU (README.md), so they are opt-in. Invalid values raise
a ValueError that lists the allowed ones.
"""

from __future__ import annotations

from typing import Callable

from pallas_kernels import platform

PALLAS_IMPLS = ("pallas", "pallas_gpu", "pallas_tpu")


def kernel_family() -> str:
  """What "pallas" runs here: "pallas_tpu" on a TPU, "pallas_gpu" elsewhere."""
  return "pallas_tpu" if platform.on_tpu() else "pallas_gpu"


def resolve_impl(impl: str, impls: tuple[str, ...], *, xla: str,
                 pallas_unsupported: Callable[[], str | None] | None = None) -> str:
  """The implementation that `impl` runs: a member of `impls` other than "auto" and
  "pallas" ("pallas" resolves to its family, "pallas_gpu" or "pallas_tpu").

  Args:
    impl: the caller's choice.
    impls: the op's implementations, "auto" included.
    xla: what "auto" runs when it does not run the kernel.
    pallas_unsupported: for ops with a GPU kernel, returns why "auto" does not run it on
      these inputs (None if it does); evaluated only when "auto" is on a GPU.
  """
  if impl not in impls:
    raise ValueError(f"impl must be one of {impls}, got {impl!r}")
  if impl == "pallas":
    return kernel_family()
  if impl != "auto":
    return impl
  if "pallas_gpu" in impls and platform.on_gpu() and (
      pallas_unsupported is None or pallas_unsupported() is None):
    return "pallas_gpu"
  return xla
