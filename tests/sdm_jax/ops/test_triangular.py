"""The unit lower-triangular inverse shared by the chunked delta rules."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sdm_jax.ops.triangular import unit_lower_triangular_inverse


@pytest.mark.parametrize("n", [1, 2, 7, 13, 16])
def test_inverts_the_unit_lower_triangle_of_any_size(n):
  """Power-of-two sizes and sizes that need padding; the upper triangle of a is ignored."""
  a = jnp.asarray(np.random.default_rng(n).normal(size=(3, n, n)), jnp.float32)
  inverse = np.asarray(jax.jit(unit_lower_triangular_inverse)(a))
  unit_lower = np.eye(n) + np.tril(np.asarray(a, np.float64), -1)
  np.testing.assert_allclose(inverse @ unit_lower, np.broadcast_to(np.eye(n), a.shape),
                             atol=1e-4)
  assert np.all(np.triu(inverse, 1) == 0)


def test_derivative_is_minus_inverse_times_da_times_inverse():
  with jax.enable_x64(True):
    rng = np.random.default_rng(3)
    a = jnp.asarray(np.tril(rng.normal(size=(5, 5)), -1) * 0.3)
    da = jnp.asarray(np.tril(rng.normal(size=(5, 5)), -1))
    _, tangent = jax.jvp(unit_lower_triangular_inverse, (a,), (da,))
    eps = 1e-6
    numeric = (unit_lower_triangular_inverse(a + eps * da)
               - unit_lower_triangular_inverse(a - eps * da)) / (2 * eps)
    np.testing.assert_allclose(tangent, numeric, rtol=1e-6, atol=1e-8)
