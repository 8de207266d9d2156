"""Feed-forward block: ReLU^2 (default) or SwiGLU."""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

ACTIVATIONS = ("relu2", "swiglu")


class MLP(nn.Module):
  """`down(act(up(x)))` with `act = relu(.)^2`, or `down(silu(gate(x)) * up(x))` for SwiGLU.

  Attributes:
    hidden_dim: width of the hidden layer.
    activation: "relu2" or "swiglu".
  """

  hidden_dim: int
  activation: str = "relu2"
  dtype: jnp.dtype = jnp.float32
  param_dtype: jnp.dtype = jnp.float32

  @nn.compact
  def __call__(self, x: jax.Array) -> jax.Array:
    if self.activation not in ACTIVATIONS:
      raise ValueError(f"activation must be one of {ACTIVATIONS}, got {self.activation!r}")
    dense = lambda features, name: nn.Dense(  # noqa: E731
        features, use_bias=False, dtype=self.dtype, param_dtype=self.param_dtype, name=name)
    if self.activation == "relu2":
      hidden = jnp.square(jax.nn.relu(dense(self.hidden_dim, "up")(x)))
    else:
      hidden = jax.nn.silu(dense(self.hidden_dim, "gate")(x)) * dense(self.hidden_dim, "up")(x)
    return dense(x.shape[-1], "down")(hidden)
