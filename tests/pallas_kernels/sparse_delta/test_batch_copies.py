"""The starting tables' copies: the kernel equals `jnp.broadcast_to`, bit for bit.

On CPU the kernel runs in interpret mode; the `gpu` test compiles it with Triton."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pallas_kernels.sparse_delta import batch_copies as copies


def _table(seed, shape, dtype):
  return jnp.asarray(np.random.default_rng(seed).normal(size=shape), dtype)


@pytest.mark.parametrize("batch,shape,dtype", [
    (3, (2, 32, 64), jnp.float32),     # whole 16-row blocks
    (2, (1, 12, 96), jnp.bfloat16),    # N and Dv not powers of two: 4-row, 32-column blocks
    (1, (2, 8, 1024), jnp.float32),    # one sequence; Dv past one 512-column block
])
def test_kernel_equals_broadcast(batch, shape, dtype):
  table = _table(batch, shape, dtype)
  got = copies.batch_copies(table, batch, interpret=True)
  want = copies.batch_copies_reference(table, batch)
  assert got.shape == (batch * shape[0], *shape[1:]) and got.dtype == dtype
  np.testing.assert_array_equal(np.asarray(got, np.float32), np.asarray(want, np.float32))
  # Sequence-major: row b * H + h is sequence b's copy of head h.
  np.testing.assert_array_equal(np.asarray(got[(batch - 1) * shape[0]], np.float32),
                                np.asarray(table[0], np.float32))


def test_bad_inputs_raise():
  with pytest.raises(ValueError, match="table must be"):
    copies.batch_copies(jnp.ones((4, 8)), 2, interpret=True)
  with pytest.raises(ValueError, match="batch must be"):
    copies.batch_copies(jnp.ones((1, 4, 8)), 0, interpret=True)


@pytest.mark.gpu
def test_compiled_kernel_equals_broadcast():
  table = _table(7, (2, 16384, 512), jnp.bfloat16)
  got = jax.jit(lambda t: copies.batch_copies(t, 4))(table)
  np.testing.assert_array_equal(np.asarray(got, np.float32),
                                np.asarray(copies.batch_copies_reference(table, 4), np.float32))
