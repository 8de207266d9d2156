"""The `G` mixer and its parts: short convolution, gates, cached decode."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sdm_jax.layers.gated_deltanet import GatedDeltaNet, l2_normalize
from sdm_jax.layers.gates import DeltaGates
from sdm_jax.layers.short_conv import causal_depthwise_conv


def test_short_conv_matches_numpy_and_chains_through_its_tail():
  x = jax.random.normal(jax.random.PRNGKey(0), (2, 9, 3))
  w = jax.random.normal(jax.random.PRNGKey(1), (4, 3))
  y, _ = causal_depthwise_conv(x, w)
  xn, wn = np.asarray(x), np.asarray(w)
  padded = np.concatenate([np.zeros((2, 3, 3)), xn], 1)
  expected = sum(padded[:, j:j + 9] * wn[j] for j in range(4))
  np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)
  first, tail = causal_depthwise_conv(x[:, :5], w)
  second, _ = causal_depthwise_conv(x[:, 5:], w, tail)
  np.testing.assert_allclose(jnp.concatenate([first, second], 1), y, rtol=1e-5, atol=1e-6)


def test_gates_start_in_their_ranges():
  x = jax.random.normal(jax.random.PRNGKey(0), (2, 7, 16))
  gates = DeltaGates(num_heads=8)
  params = gates.init(jax.random.PRNGKey(1), x)
  a = jnp.exp(params["params"]["A_log"])
  assert bool(jnp.all((a >= 1) & (a <= 16)))
  dt = jax.nn.softplus(params["params"]["dt_bias"])
  assert bool(jnp.all((dt >= 1e-3 * 0.999) & (dt <= 1e-1 * 1.001)))
  g, beta = gates.apply(params, x)
  assert g.shape == beta.shape == (2, 7, 8)
  assert bool(jnp.all(g <= 0)) and bool(jnp.all((beta > 0) & (beta < 1)))


def test_l2_normalize():
  x = jax.random.normal(jax.random.PRNGKey(0), (3, 5))
  np.testing.assert_allclose(jnp.linalg.norm(l2_normalize(x), axis=-1), 1.0, rtol=1e-5)


@pytest.mark.parametrize("expand_v", [1.0, 2.0])
def test_cached_decode_equals_parallel_forward(expand_v):
  layer = GatedDeltaNet(model_dim=16, num_heads=2, head_dim=8, expand_v=expand_v,
                        chunk_size=4)
  x = jax.random.normal(jax.random.PRNGKey(0), (2, 11, 16))
  positions = jnp.broadcast_to(jnp.arange(11), (2, 11))
  params = layer.init(jax.random.PRNGKey(1), x, positions)
  full = layer.apply(params, x, positions)
  assert full.shape == x.shape
  prompt = 2  # shorter than the conv kernel: the tail must be zero-padded correctly
  head, cache = layer.apply(params, x[:, :prompt], positions[:, :prompt], 64,
                            method=GatedDeltaNet.prefill)
  np.testing.assert_allclose(head, full[:, :prompt], rtol=1e-5, atol=1e-5)
  decode = jax.jit(lambda p, xt, c: layer.apply(p, xt, None, c, method=GatedDeltaNet.decode))
  outs = []
  for t in range(prompt, 11):
    y, cache = decode(params, x[:, t:t + 1], cache)
    outs.append(y)
  np.testing.assert_allclose(jnp.concatenate(outs, 1), full[:, prompt:], rtol=1e-4, atol=1e-5)
  assert cache.state.shape == (2, 2, 8, int(8 * expand_v))
  assert cache.state.dtype == jnp.float32
