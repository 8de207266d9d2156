"""The pair-weight kernels (interpret mode on CPU) against the XLA forward and its autodiff."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pallas_kernels.sparse_delta import pair_weights


def _inputs(seed, *, chunks=3, chunk=16, width=8, unwritten=0.3):
  """Random tables and entries: rows in [0, U], about `unwritten` of them the zero row U,
  and `order` sorting the others by row (ties by token) with the row-U entries mixed in
  among them, as phase 1's slot order leaves reads of unwritten slots."""
  rng = np.random.default_rng(seed)
  table_rows = chunk * width + 1
  pos = rng.integers(0, table_rows - 1, (chunks, chunk, width))
  pos = np.where(rng.random(pos.shape) < unwritten, table_rows - 1, pos)
  # Sort keys: row 2p for an entry of row p, a random odd key for a row-U entry.
  keys = np.where(pos < table_rows - 1, 2 * pos, 2 * rng.integers(0, table_rows, pos.shape) + 1)
  order = np.stack([np.argsort(k.reshape(-1), kind="stable") for k in keys])
  key_table = rng.standard_normal((chunks, table_rows, chunk))
  key_table[:, -1] = 0  # row U is all zeros
  cum_log_decay = -np.abs(rng.standard_normal((chunks, table_rows, chunk))).cumsum(-1) * 0.3
  weights = rng.standard_normal((chunks, chunk, width))
  log_at_token = -np.abs(rng.standard_normal((chunks, chunk, width)))
  f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
  return (jnp.asarray(pos, jnp.int32), f32(weights), f32(log_at_token), f32(key_table),
          f32(cum_log_decay), jnp.asarray(order, jnp.int32))


def _grads(impl, args, strict, d_pairs, config=None):
  pos, *floats, order = args

  def loss(*floats):
    pairs = pair_weights.pair_weights(pos, *floats, order, strict=strict, impl=impl,
                                      config=config)
    return jnp.sum(pairs * d_pairs)

  return jax.jit(jax.grad(loss, argnums=(0, 1, 2, 3)))(*floats)


def _assert_grads_match(got, want, *, tol):
  names = ("weights", "log_at_token", "key_table", "cum_log_decay")
  for name, a, b in zip(names, got, want):
    if name in ("key_table", "cum_log_decay"):  # row U's gradient reaches nothing
      a, b = a[:, :-1], b[:, :-1]
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol,
                               atol=tol * float(jnp.max(jnp.abs(b))), err_msg=name)


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("config", [pair_weights.KernelConfig(),
                                    pair_weights.KernelConfig(row_tile=16, entry_block=16)])
def test_kernel_backward_matches_xla(strict, config):
  args = _inputs(int(strict) + 2 * config.row_tile, unwritten=0.0 if strict else 0.3)
  d_pairs = jax.random.normal(jax.random.PRNGKey(3), (3, 16, 16))
  _assert_grads_match(_grads("pallas", args, strict, d_pairs, config),
                      _grads("xla", args, strict, d_pairs), tol=2e-5)


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("width,forward_block", [(8, 4096), (5, 64)])
def test_kernel_forward_matches_xla(strict, width, forward_block):
  """Widths that are not a power of two are padded; a small block takes one token and a
  few entries per step, so several steps and token blocks run."""
  pos, *floats, order = _inputs(7, width=width)
  config = pair_weights.KernelConfig(forward_block=forward_block)
  want = pair_weights.pair_weights(pos, *floats, order, strict=strict, impl="xla")
  got = pair_weights.pair_weights(pos, *floats, order, strict=strict, impl="pallas",
                                  config=config)
  np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5,
                             atol=1e-6 * float(jnp.max(jnp.abs(want))))
  assert float(jnp.max(jnp.abs(want))) > 0


def test_unknown_impl_raises():
  pos, *floats, order = _inputs(1)
  with pytest.raises(ValueError, match="impl must be one of"):
    pair_weights.pair_weights(pos, *floats, order, strict=False, impl="triton")


@pytest.mark.gpu
@pytest.mark.parametrize("strict", [False, True])
def test_compiled_kernel_matches_xla(strict):
  """sdm_small's chunk shape: C = 32, X = 64 entries per token, U + 1 = 2,049 rows;
  forward and backward kernels."""
  args = _inputs(11, chunks=8, chunk=32, width=64, unwritten=0.0 if strict else 0.3)
  pos, *floats, order = args
  pairs = {impl: jax.jit(lambda *f, impl=impl: pair_weights.pair_weights(
      pos, *f, order, strict=strict, impl=impl))(*floats) for impl in pair_weights.IMPLS}
  np.testing.assert_allclose(np.asarray(pairs["pallas"]), np.asarray(pairs["xla"]),
                             rtol=1e-5, atol=1e-6 * float(jnp.max(jnp.abs(pairs["xla"]))))
  d_pairs = jax.random.normal(jax.random.PRNGKey(3), (8, 32, 32))
  _assert_grads_match(jax.jit(lambda: _grads("pallas", args, strict, d_pairs))(),
                      jax.jit(lambda: _grads("xla", args, strict, d_pairs))(), tol=1e-4)
