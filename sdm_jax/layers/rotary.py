"""Rotary position embeddings (RoPE) on time-major `[B, T, H, D]` tensors."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def inverse_frequencies(head_dim: int, base: float = 10_000.0) -> np.ndarray:
  """[D / 2] float32 `base^(-2i/D)`: pair i's angle per position. A host constant (numpy),
  so a jitted step embeds it rather than computing it on the device every step."""
  half = head_dim // 2
  return np.float32(base) ** (-np.arange(half, dtype=np.float32) / np.float32(half))


def apply_rotary(x: jax.Array, positions: jax.Array, base: float = 10_000.0) -> jax.Array:
  """Rotates pairs `(x[..., i], x[..., i + D/2])` by angle `positions * base^(-2i/D)`.

  Args:
    x: [B, T, H, D] with D even.
    positions: [B, T] integer positions of each token.
    base: the wavelength base.

  Returns:
    [B, T, H, D] in `x.dtype`; the rotation is computed in float32.
  """
  head_dim = x.shape[-1]
  if head_dim % 2:
    raise ValueError(f"rotary embeddings need an even head dim, got {head_dim}")
  half = head_dim // 2
  inv_freq = inverse_frequencies(head_dim, base)
  angles = positions.astype(jnp.float32)[..., None] * inv_freq  # [B, T, D/2]
  cos = jnp.cos(angles)[:, :, None, :]
  sin = jnp.sin(angles)[:, :, None, :]
  x32 = x.astype(jnp.float32)
  x1, x2 = x32[..., :half], x32[..., half:]
  rotated = jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)
  return rotated.astype(x.dtype)
