"""RMS normalisation: `y = x / sqrt(mean(x^2) + eps) * scale`."""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp


def rms_norm(x: jax.Array, scale: jax.Array | None = None, eps: float = 1e-6) -> jax.Array:
  """Normalises the last axis of `x` [..., D] by its root mean square (computed in float32).

  Returns `x / sqrt(mean(x^2) + eps) * scale` in `x.dtype`; `scale` [D] is optional.
  """
  x32 = x.astype(jnp.promote_types(x.dtype, jnp.float32))
  y = x32 * jax.lax.rsqrt(jnp.mean(jnp.square(x32), axis=-1, keepdims=True) + eps)
  if scale is not None:
    y = y * scale.astype(y.dtype)
  return y.astype(x.dtype)


class RMSNorm(nn.Module):
  """RMSNorm over the last axis, with a learned scale initialised at one."""

  eps: float = 1e-6
  use_scale: bool = True
  param_dtype: jnp.dtype = jnp.float32

  @nn.compact
  def __call__(self, x: jax.Array) -> jax.Array:
    scale = None
    if self.use_scale:
      scale = self.param("scale", nn.initializers.ones, (x.shape[-1],), self.param_dtype)
    return rms_norm(x, scale, self.eps)
