"""Sums of rows picked by a 0/1 matrix on tensor cores, as exact as float32 storage.

Triton's dot takes bfloat16 operands at full speed; a float32 operand split into bfloat16
pieces (x = p1 + p2 + p3 + tiny) keeps every bit a float32 (3 pieces) or bfloat16 (1
piece) value holds, and a 0/1 matrix is exact in bfloat16, so the products sum in float32
with no rounding of the operands. Used by the decode step kernel (rows re-read after a
write) and the pair weights' backward (cotangents summed per table row).
"""

from __future__ import annotations

import jax.numpy as jnp


def onehot_matmul(onehot, x, pieces: int):
  """onehot [M, K] (0/1 or bool) @ x [K, N] float32 -> [M, N] float32, as bf16 tensor-core
  matmuls of x's pieces: exact for values that `pieces` bfloat16 pieces hold (1: bf16
  values, 3: float32)."""
  onehot = onehot.astype(jnp.bfloat16)
  parts = []
  rest = x
  for _ in range(pieces):
    piece = rest.astype(jnp.bfloat16)
    parts.append(piece)
    rest = rest - piece.astype(jnp.float32)
  total = None
  for piece in reversed(parts):  # smallest first
    part = jnp.dot(onehot, piece, preferred_element_type=jnp.float32)
    total = part if total is None else total + part
  return total
