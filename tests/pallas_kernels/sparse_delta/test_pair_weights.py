"""The pair-weight kernels (interpret mode on CPU) against the XLA forward and its autodiff."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pallas_kernels.sparse_delta import layout, pair_weights


def _segments(rng, write_ids, num_entries):
  """SlotSegments arrays of one chunk's writes [C, W] (numpy): begin, row, token, and
  random keys and cumulative logs (each segment's running sum of negative steps)."""
  flat = write_ids.reshape(-1)
  order = np.argsort(flat, kind="stable")
  _, row = np.unique(flat[order], return_inverse=True)
  begin = np.searchsorted(row, np.arange(num_entries + 2))
  steps = -np.abs(rng.standard_normal(flat.size)) * 0.3
  cum_log = np.array([steps[begin[r]:e + 1].sum() for e, r in enumerate(row)])
  return order, row, begin, order // write_ids.shape[1], rng.standard_normal(flat.size), cum_log


def _inputs(seed, *, chunks=3, chunk=16, writes=4, width=8, slots=40, strict=False):
  """Random chunks of writes (distinct slots per token, from `slots`, so slots repeat) and
  their entries: the writes themselves (strict, the A pair weights), or `width` reads per
  token of which about a quarter hit slots the chunk does not write (the zero row U) and
  sit among the others in the slot order, as phase 1 leaves them. Returns (pos, weights,
  log_at_token, SlotSegments, order)."""
  rng = np.random.default_rng(seed)
  num_entries = chunk * writes  # U
  parts = []
  for _ in range(chunks):
    write_ids = np.stack([rng.choice(slots, writes, replace=False) for _ in range(chunk)])
    write_order, row, begin, token, key, cum_log = _segments(rng, write_ids, num_entries)
    if strict:
      pos = np.empty(write_ids.size, np.int64)
      pos[write_order] = row
      pos, order = pos.reshape(write_ids.shape), write_order
    else:
      read_ids = rng.integers(0, slots * 4 // 3, (chunk, width))
      unique = np.unique(write_ids)
      pos = np.where(np.isin(read_ids, unique), np.searchsorted(unique, read_ids), num_entries)
      order = np.argsort(read_ids.reshape(-1), kind="stable")
    parts.append((pos, order, begin, row, token, key, cum_log))
  pos, order, begin, row, token, key, cum_log = map(np.stack, zip(*parts))
  weights = rng.standard_normal(pos.shape)
  log_at_token = -np.abs(rng.standard_normal(pos.shape))
  f32 = lambda x: jnp.asarray(x, jnp.float32)  # noqa: E731
  i32 = lambda x: jnp.asarray(x, jnp.int32)  # noqa: E731
  segments = pair_weights.SlotSegments(i32(begin), i32(row), i32(token), f32(key),
                                       f32(cum_log))
  return i32(pos), f32(weights), f32(log_at_token), segments, layout.permutation(i32(order))


def _pairs(impl, args, strict, config=None, own_writes=False):
  pos, weights, log_at_token, segments, order = args
  return pair_weights.pair_weights(pos, weights, log_at_token, segments, order,
                                   strict=strict, impl=impl, config=config,
                                   own_writes=own_writes)


def _grads(impl, args, strict, d_pairs, config=None, own_writes=False):
  pos, weights, log_at_token, segments, order = args

  def loss(weights, log_at_token, key, cum_log):
    args = (pos, weights, log_at_token, segments._replace(key=key, cum_log=cum_log), order)
    return jnp.sum(_pairs(impl, args, strict, config, own_writes) * d_pairs)

  return jax.jit(jax.grad(loss, argnums=(0, 1, 2, 3)))(
      weights, log_at_token, segments.key, segments.cum_log)


def _assert_grads_match(got, want, *, tol):
  for name, a, b in zip(("weights", "log_at_token", "key", "cum_log"), got, want):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol,
                               atol=tol * float(jnp.max(jnp.abs(b))), err_msg=name)
    assert float(jnp.max(jnp.abs(b))) > 0, name


def test_segment_tables_are_the_slot_major_tables():
  """K[p, u] = k of row p's write at token u; L[p, u] = its cumulative log at the last
  write at or before u (0 before the first), checked against a per-cell loop."""
  _, _, _, segments, _ = _inputs(5, chunks=2)
  key_table, cum_log_decay = map(np.asarray, pair_weights.segment_tables(segments, 16))
  begin, row, token, key, cum_log = map(np.asarray, segments)
  for n, p, u in np.ndindex(key_table.shape):
    writes = [j for j in range(begin[n, p], begin[n, p + 1]) if token[n, j] <= u]
    at_u = [j for j in writes if token[n, j] == u]
    assert key_table[n, p, u] == (key[n, at_u[0]] if at_u else 0)
    np.testing.assert_allclose(cum_log_decay[n, p, u], cum_log[n, writes[-1]] if writes else 0,
                               rtol=1e-6, atol=1e-6)
  assert np.all(row[:, 1:] >= row[:, :-1]) and key_table[:, -1].max() == 0


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("config", [pair_weights.KernelConfig(),
                                    pair_weights.KernelConfig(row_tile=16, entry_block=16)])
def test_kernel_backward_matches_xla(strict, config):
  args = _inputs(int(strict) + 2 * config.row_tile, strict=strict)
  d_pairs = jax.random.normal(jax.random.PRNGKey(3), (3, 16, 16))
  _assert_grads_match(_grads("pallas", args, strict, d_pairs, config),
                      _grads("xla", args, strict, d_pairs), tol=2e-5)


@pytest.mark.parametrize("lanes", [128, 16])
@pytest.mark.parametrize("slots", [40, 6])
def test_own_writes_backward_matches_xla(lanes, slots):
  """The A pair weights' backward with a lane per write (`own_writes`): 64 writes per chunk
  in lane blocks of 128 (one block, half of it past the entries) or 16 (four); slots from
  40 (segments of one to a few writes) or from 6 (every token writes 4 of the 6 slots:
  segments 8 to 16 deep)."""
  args = _inputs(30 + slots, writes=4, slots=slots, strict=True)
  d_pairs = jax.random.normal(jax.random.PRNGKey(4), (3, 16, 16))
  config = pair_weights.KernelConfig(own_writes_lanes=lanes)
  _assert_grads_match(_grads("pallas", args, True, d_pairs, config, own_writes=True),
                      _grads("xla", args, True, d_pairs), tol=2e-5)


def test_own_writes_rejects_entries_that_are_not_the_writes():
  with pytest.raises(ValueError, match="own_writes needs the entries"):
    _pairs("pallas", _inputs(1, width=8, writes=4), strict=False, own_writes=True)


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("width,forward_block", [(8, 4096), (5, 64)])
def test_kernel_forward_matches_xla(strict, width, forward_block):
  """Widths that are not a power of two are padded; a small block takes one token and a
  few entries per step, so several steps and token blocks run."""
  args = _inputs(7, width=width, writes=width, strict=strict)
  want = _pairs("xla", args, strict)
  got = _pairs("pallas", args, strict, pair_weights.KernelConfig(forward_block=forward_block))
  np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5,
                             atol=1e-6 * float(jnp.max(jnp.abs(want))))
  assert float(jnp.max(jnp.abs(want))) > 0


def test_unknown_impl_raises():
  with pytest.raises(ValueError, match="impl must be one of"):
    _pairs("triton", _inputs(1), strict=False)


@pytest.mark.gpu
@pytest.mark.parametrize("strict", [False, True])
def test_compiled_kernel_matches_xla(strict):
  """sdm_small's chunk shape at C = 32: X = W = 64 entries per token, U + 1 = 2,049 rows
  (slots drawn from 4,096, so a few repeat); forward and backward kernels."""
  args = _inputs(11, chunks=8, chunk=32, writes=64, width=64, slots=4096, strict=strict)
  pairs = {impl: jax.jit(lambda impl=impl: _pairs(impl, args, strict))()
           for impl in pair_weights.IMPLS}
  np.testing.assert_allclose(np.asarray(pairs["pallas"]), np.asarray(pairs["xla"]),
                             rtol=1e-5, atol=1e-6 * float(jnp.max(jnp.abs(pairs["xla"]))))
  d_pairs = jax.random.normal(jax.random.PRNGKey(3), (8, 32, 32))
  want = _grads("xla", args, strict, d_pairs)
  _assert_grads_match(_grads("pallas", args, strict, d_pairs), want, tol=1e-4)
  if strict:  # the writes' own lanes too
    _assert_grads_match(_grads("pallas", args, strict, d_pairs, own_writes=True), want,
                        tol=1e-4)
