"""Batch-1 decoding's projections at GEMM speed.

At one token per step and batch 1, a projection is a [1, d] @ [d, n] product. XLA on GPU
rewrites such a dot as a multiply and a reduction over d (and fuses sibling projections
into one reduction): on the H200 at d = 2048 the SDM layer's projections took 0.07 ms per
step that way against 0.02 ms as one GEMM at batch 8 (`bench_decode --top_ops`,
WORKSPACE.md issue 15, session 16). Padding the rows to `MIN_ROWS` should keep the GEMM
(on CPU the optimized HLO keeps the [2, d] dot); the padded rows are zeros and are dropped
after the layer's token-wise work. Used by the SDM step and attention decode (A, S); the
effect on the H200 is not yet timed (WORKSPACE.md, issue 15, session 16, has the A/B).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

MIN_ROWS = 2


def pad_rows(x: jax.Array) -> jax.Array:
  """x [B, ...] with zero rows appended up to MIN_ROWS (unchanged when B >= MIN_ROWS)."""
  missing = MIN_ROWS - x.shape[0]
  if missing <= 0:
    return x
  return jnp.concatenate([x, jnp.zeros((missing,) + x.shape[1:], x.dtype)])
