"""The dtype recurrences accumulate in: at least float32 (DESIGN.md 2)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np


def accumulation_dtype(*arrays_or_dtypes) -> np.dtype:
  """float32 for bf16/f16/f32 inputs; float64 if any input is float64."""
  return np.dtype(jnp.promote_types(jnp.result_type(*arrays_or_dtypes), jnp.float32))
