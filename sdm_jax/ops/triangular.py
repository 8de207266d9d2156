"""The inverse of unit lower-triangular matrices, as batched matmuls: the C x C solve of
the chunked delta rules (Gated DeltaNet's WY/UT form, Sparse Delta Memory's phase 1)."""

from __future__ import annotations

import functools

import jax
from jax import lax
import jax.numpy as jnp

from pallas_kernels.blocks import next_power_of_two


def unit_lower_triangular_inverse(a, *, precision=lax.Precision.HIGHEST):
  """(I + a)^-1 for strictly lower-triangular a [..., n, n], by recursive 2 x 2 blocking.

  [[L11, 0], [L21, L22]]^-1 = [[X11, 0], [-X22 L21 X11, X22]] with X = L^-1 of each
  diagonal block; both halves are inverted together as one batch, so the work is log2(n)
  levels of batched matmuls (no triangular-solve kernel, which batches poorly on GPU).
  The upper triangle of `a` (diagonal included) is ignored.
  """
  n = a.shape[-1]
  size = next_power_of_two(n)  # so the halves stack
  lower = jnp.tril(a, -1)
  if size != n:  # Block-diagonal padding with I leaves the leading n x n inverse unchanged.
    pad = [(0, 0)] * (a.ndim - 2) + [(0, size - n), (0, size - n)]
    lower = jnp.pad(lower, pad)
  return _inverse_of_unit_lower(lower, precision)[..., :n, :n]


@functools.partial(jax.custom_jvp, nondiff_argnums=(1,))
def _inverse_of_unit_lower(lower, precision):
  """(I + lower)^-1 for strictly lower-triangular `lower` [..., n, n], n a power of two."""
  size = lower.shape[-1]
  if size == 1:
    return jnp.ones_like(lower)
  half = size // 2
  diagonal_blocks = jnp.stack([lower[..., :half, :half], lower[..., half:, half:]])
  inverses = _inverse_of_unit_lower(diagonal_blocks, precision)
  top, bottom = inverses[0], inverses[1]
  matmul = functools.partial(jnp.matmul, precision=precision)
  bottom_left = -matmul(matmul(bottom, lower[..., half:, :half]), top)
  return jnp.concatenate([
      jnp.concatenate([top, jnp.zeros_like(top)], axis=-1),
      jnp.concatenate([bottom_left, bottom], axis=-1),
  ], axis=-2)


@_inverse_of_unit_lower.defjvp
def _inverse_of_unit_lower_jvp(precision, primals, tangents):
  # d(L^-1) = -L^-1 dL L^-1: two matmuls (and, transposed, two in reverse mode) instead of
  # differentiating through every level of the recursion.
  (lower,), (lower_dot,) = primals, tangents
  inverse = _inverse_of_unit_lower(lower, precision)
  matmul = functools.partial(jnp.matmul, precision=precision)
  return inverse, -matmul(matmul(inverse, lower_dot), inverse)
