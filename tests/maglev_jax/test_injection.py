"""The gated mix of local and recurrent keys/values."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from maglev_jax.injection import MemoryInjection, mix_local_and_recurrent


def test_mix_follows_the_gate_equation():
  rng = np.random.default_rng(0)
  local, recurrent = rng.standard_normal((2, 2, 5, 3, 4)).astype(np.float32)
  gl, gr = rng.standard_normal((2, 2, 5, 3)).astype(np.float32)
  sigmoid = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731
  expected = 2 * sigmoid(gl)[..., None] * local + 2 * sigmoid(gr)[..., None] * recurrent
  np.testing.assert_allclose(jax.jit(mix_local_and_recurrent)(local, recurrent, gl, gr),
                             expected, rtol=1e-5, atol=1e-6)


def test_gates_start_at_one_and_zero_memory_adds_nothing():
  rng = np.random.default_rng(1)
  x, memory = rng.standard_normal((2, 2, 6, 8)).astype(np.float32)
  k, v = rng.standard_normal((2, 2, 6, 2, 4)).astype(np.float32)
  positions = jnp.broadcast_to(jnp.arange(6), (2, 6))
  injection = MemoryInjection(num_heads=2, head_dim=4)

  @jax.jit
  def fresh(x, k, v, positions, memory):
    with_memory, params = injection.init_with_output(jax.random.PRNGKey(2), x, k, v,
                                                     positions, memory_prev=memory)
    without = injection.apply(params, x, k, v, positions, memory_prev=jnp.zeros_like(memory))
    return with_memory, without
  (k_bar, v_bar), (k_zero, v_zero) = fresh(x, k, v, positions, memory)
  k_rec, v_rec = k_bar - k, v_bar - v  # gates are exactly 1 at initialisation
  assert float(jnp.min(jnp.abs(v_rec).sum(-1))) > 0
  # k_rec is RMS-normalised per head (unit scale), then rotated (norm-preserving).
  np.testing.assert_allclose(jnp.sqrt(jnp.mean(jnp.square(k_rec), -1)), 1.0, rtol=1e-4)
  np.testing.assert_allclose(k_zero, k, atol=1e-6)
  np.testing.assert_allclose(v_zero, v, atol=1e-6)
