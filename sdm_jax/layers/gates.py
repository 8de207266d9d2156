"""The forget and write gates shared by the delta-rule mixers (GDN `G` and SDM `M`).

  g    = -exp(A_log) * softplus(W_a x + dt_bias)   (log forget gate, g <= 0)
  beta = sigmoid(W_b x)                            (write strength in (0, 1))

Initialisation as in Mamba-2 / Gated DeltaNet: A ~ U(1, 16) stored as log, and
dt_bias = softplus^-1(dt) with dt log-uniform in [1e-3, 1e-1]. Neither gets weight decay
(see `sdm_jax.training.optim.NO_DECAY_NAMES`).
"""

from __future__ import annotations

import math

import flax.linen as nn
import jax
import jax.numpy as jnp

DT_MIN, DT_MAX = 1e-3, 1e-1
A_MIN, A_MAX = 1.0, 16.0


def init_a_log(key: jax.Array, shape, dtype=jnp.float32) -> jax.Array:
  return jnp.log(jax.random.uniform(key, shape, dtype, A_MIN, A_MAX))


def init_dt_bias(key: jax.Array, shape, dtype=jnp.float32) -> jax.Array:
  dt = jnp.exp(jax.random.uniform(key, shape, dtype, math.log(DT_MIN), math.log(DT_MAX)))
  return dt + jnp.log(-jnp.expm1(-dt))  # softplus^-1(dt) = log(exp(dt) - 1)


class DeltaGates(nn.Module):
  """x [B, T, d] -> (g [B, T, H] float32 (<= 0), beta [B, T, H] float32 in (0, 1))."""

  num_heads: int
  dtype: jnp.dtype = jnp.float32
  param_dtype: jnp.dtype = jnp.float32

  @nn.compact
  def __call__(self, x: jax.Array) -> tuple[jax.Array, jax.Array]:
    dense = lambda name: nn.Dense(self.num_heads, use_bias=False, dtype=self.dtype,  # noqa: E731
                                  param_dtype=self.param_dtype, name=name)
    a_log = self.param("A_log", init_a_log, (self.num_heads,), self.param_dtype)
    dt_bias = self.param("dt_bias", init_dt_bias, (self.num_heads,), self.param_dtype)
    a = dense("a_proj")(x).astype(jnp.float32)
    b = dense("b_proj")(x).astype(jnp.float32)
    g = -jnp.exp(a_log.astype(jnp.float32)) * jax.nn.softplus(a + dt_bias.astype(jnp.float32))
    return g, jax.nn.sigmoid(b)
