"""Causal depthwise short convolution (the `ShortConvolution` of linear-attention layers).

`y[t, c] = sum_{j=0}^{K-1} w[j, c] * x[t - K + 1 + j, c]`, with x = 0 before the sequence
(or the cached tail of the previous tokens when decoding).
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp


def causal_depthwise_conv(x: jax.Array, weight: jax.Array,
                          tail: jax.Array | None = None) -> tuple[jax.Array, jax.Array]:
  """Applies the convolution along time.

  Args:
    x: [B, T, C] inputs.
    weight: [K, C] per-channel taps (tap K-1 multiplies the current token).
    tail: [B, K-1, C] the inputs just before x (zeros at the start of a sequence).

  Returns:
    (y [B, T, C], new_tail [B, K-1, C] = the last K-1 inputs, for the next call).
  """
  kernel = weight.shape[0]
  batch, _, channels = x.shape
  if tail is None:
    tail = jnp.zeros((batch, kernel - 1, channels), x.dtype)
  padded = jnp.concatenate([tail.astype(x.dtype), x], axis=1)  # [B, K-1+T, C]
  length = x.shape[1]
  y = sum(padded[:, j:j + length] * weight[j].astype(x.dtype) for j in range(kernel))
  return y, padded[:, length:]


class ShortConv(nn.Module):
  """Depthwise causal convolution of `kernel_size` taps, no bias."""

  kernel_size: int = 4
  param_dtype: jnp.dtype = jnp.float32

  @nn.compact
  def __call__(self, x: jax.Array, tail: jax.Array | None = None):
    if self.kernel_size < 1:
      raise ValueError(f"kernel_size must be >= 1, got {self.kernel_size}")
    # Fan-in of a depthwise tap is kernel_size: uniform(+-1/sqrt(K)) as in PyTorch's Conv1d.
    bound = self.kernel_size ** -0.5
    init = lambda key, shape, dtype: jax.random.uniform(key, shape, dtype, -bound, bound)  # noqa: E731
    weight = self.param("weight", init, (self.kernel_size, x.shape[-1]), self.param_dtype)
    return causal_depthwise_conv(x, weight, tail)
