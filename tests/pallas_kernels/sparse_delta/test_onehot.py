"""One-hot sums on bf16 tensor cores against float64 sums of the same rows."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pallas_kernels.sparse_delta.onehot import onehot_matmul


@pytest.mark.parametrize("pieces,dtype,tol", [(3, jnp.float32, 1e-6), (1, jnp.bfloat16, 1e-6)])
def test_sums_the_picked_rows_as_exactly_as_the_storage(pieces, dtype, tol):
  k1, k2 = jax.random.split(jax.random.key(0))
  x = jax.random.normal(k1, (24, 16), jnp.float32).astype(dtype).astype(jnp.float32)
  rows = jax.random.randint(k2, (24,), 0, 8)  # each of the 24 entries picks one of 8 rows
  onehot = jnp.arange(8)[:, None] == rows[None, :]
  got = np.asarray(onehot_matmul(onehot, x, pieces))
  want = np.asarray(onehot, np.float64) @ np.asarray(x, np.float64)
  assert got.dtype == np.float32 and np.abs(want).max() > 1
  np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
