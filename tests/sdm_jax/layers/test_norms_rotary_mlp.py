"""RMSNorm, rotary embeddings and the MLP block."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sdm_jax.layers.mlp import MLP
from sdm_jax.layers.norms import RMSNorm, rms_norm
from sdm_jax.layers.rotary import apply_rotary


def test_rms_norm_matches_formula():
  x = jax.random.normal(jax.random.PRNGKey(0), (3, 5, 16)) * 3 + 1
  scale = jax.random.normal(jax.random.PRNGKey(1), (16,))
  expected = np.asarray(x) / np.sqrt(np.mean(np.asarray(x) ** 2, -1, keepdims=True) + 1e-6)
  np.testing.assert_allclose(rms_norm(x, scale), expected * np.asarray(scale), rtol=1e-5)
  params = RMSNorm().init(jax.random.PRNGKey(2), x)
  np.testing.assert_allclose(RMSNorm().apply(params, x), expected, rtol=1e-5)


def test_rms_norm_keeps_bf16_dtype():
  x = jax.random.normal(jax.random.PRNGKey(0), (4, 8)).astype(jnp.bfloat16)
  assert rms_norm(x).dtype == jnp.bfloat16


def test_rotary_depends_only_on_relative_position():
  q = jax.random.normal(jax.random.PRNGKey(0), (1, 1, 1, 8))
  k = jax.random.normal(jax.random.PRNGKey(1), (1, 1, 1, 8))
  def score(m, n):
    rq = apply_rotary(q, jnp.array([[m]]))
    rk = apply_rotary(k, jnp.array([[n]]))
    return float(jnp.sum(rq * rk))
  assert score(5, 2) == pytest.approx(score(13, 10), rel=1e-5)
  assert score(5, 2) != pytest.approx(score(5, 3), rel=1e-3)
  # A rotation keeps the norm.
  np.testing.assert_allclose(jnp.linalg.norm(apply_rotary(q, jnp.array([[7]]))),
                             jnp.linalg.norm(q), rtol=1e-6)


def test_rotary_rejects_odd_head_dim():
  with pytest.raises(ValueError, match="even"):
    apply_rotary(jnp.ones((1, 2, 1, 5)), jnp.zeros((1, 2), jnp.int32))


@pytest.mark.parametrize("activation", ["relu2", "swiglu"])
def test_mlp_shapes_and_activation(activation):
  x = jax.random.normal(jax.random.PRNGKey(0), (2, 3, 8))
  mlp = MLP(32, activation)
  params = mlp.init(jax.random.PRNGKey(1), x)
  y = mlp.apply(params, x)
  assert y.shape == x.shape
  names = set(params["params"])
  assert names == ({"up", "down"} if activation == "relu2" else {"gate", "up", "down"})
  if activation == "relu2":
    p = params["params"]
    hidden = np.maximum(np.asarray(x) @ np.asarray(p["up"]["kernel"]), 0) ** 2
    np.testing.assert_allclose(y, hidden @ np.asarray(p["down"]["kernel"]), rtol=1e-4,
                               atol=1e-5)


def test_mlp_rejects_unknown_activation():
  with pytest.raises(ValueError, match="activation"):
    MLP(8, "gelu").init(jax.random.PRNGKey(0), jnp.ones((1, 1, 4)))
