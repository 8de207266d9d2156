"""Where kernels run: compiled on a GPU, in interpret mode (their semantics) elsewhere."""

from __future__ import annotations

import jax


def on_gpu() -> bool:
  """True when JAX's default backend is a GPU (the Pallas kernels compile with Triton)."""
  return jax.default_backend() == "gpu"
