"""x @ [W_1 | W_2 | ...] in XLA: the twin of `skinny_pallas`."""

from __future__ import annotations

from typing import Sequence

import jax
import jax.numpy as jnp


def skinny_matmul(x: jax.Array, weights: Sequence[jax.Array]) -> jax.Array:
  """x [M, K] times each of `weights` ([K, N_i]), side by side: [M, sum N_i] in x.dtype,
  products summed in float32 (float64 for float64 inputs)."""
  accumulate = jnp.promote_types(x.dtype, jnp.float32)
  return jnp.concatenate(
      [jnp.dot(x, w, preferred_element_type=accumulate) for w in weights],
      axis=-1).astype(x.dtype)
