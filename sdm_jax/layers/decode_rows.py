"""Batch-1 decoding's projections at GEMM speed.

At one token per step and batch 1, a projection is a [1, d] @ [d, n] product. XLA on GPU
rewrites such a dot as a multiply and a reduction over d (and fuses sibling projections
into one reduction): on the H200 at d = 2048 the SDM layer's projections took 0.07 ms per
step that way against 0.02 ms as one GEMM at batch 8 (`bench_decode --top_ops`,
WORKSPACE.md issue 15, session 16). Padded to `MIN_ROWS` rows the dots stay GEMMs; the
padded rows are zeros and are dropped after the layer's token-wise work. On the H200 this
took the batch-1 step in a scan from 0.139 to 0.064-0.068 ms (SDM) and from 0.106 to
0.078 ms (attention), and whole-model batch-1 decoding 5-6% faster with G's projections,
the MLPs and the head padded too (WORKSPACE.md, issue 15, session 17). Used by every
mixer's decode step, `Block.decode`'s MLP and `LM.decode`'s head.
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
