"""The chunked gated delta rule against the token-by-token reference, gradients, errors.

Most tests share one input shape and chunk size so the jitted ops compile once for all.
"""

from __future__ import annotations


import jax
from jax.test_util import check_grads
import jax.numpy as jnp
import numpy as np
import pytest

from pallas_kernels import platform
from sdm_jax import ops
from sdm_jax.ops import gated_delta

SHAPE = dict(batch=2, seq_len=37, heads=3, key_dim=8, value_dim=5)
CHUNK = 8  # 37 tokens: four full chunks and a padded one.


def make_inputs(seed, *, batch, seq_len, heads, key_dim, value_dim, dtype=np.float32):
  """Random inputs as a GDN layer feeds them: unit-norm k, g < 0, beta in (0, 1)."""
  rng = np.random.default_rng(seed)
  shape = (batch, seq_len, heads)
  q = rng.normal(size=(*shape, key_dim))
  k = rng.normal(size=(*shape, key_dim))
  k /= np.linalg.norm(k, axis=-1, keepdims=True)
  v = rng.normal(size=(*shape, value_dim))
  g = -np.log1p(np.exp(-rng.normal(size=shape) - 2.0))  # log sigmoid(x + 2)
  beta = 1.0 / (1.0 + np.exp(-rng.normal(size=shape)))
  state = rng.normal(size=(batch, heads, key_dim, value_dim))
  return tuple(jnp.asarray(x, dtype) for x in (q, k, v, g, beta)), jnp.asarray(state, dtype)


def relative_error(actual, expected):
  actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
  return np.abs(actual - expected).max() / np.abs(expected).max()


@pytest.fixture(scope="module")
def inputs():
  return make_inputs(0, **SHAPE)


@pytest.fixture(scope="module")
def reference(inputs):
  (q, k, v, g, beta), state = inputs
  return ops.gated_delta_rule(q, k, v, g, beta, initial_state=state, impl="reference")


def run_impl(impl, q, k, v, g, beta, state, chunk_size):
  """The public op for "auto"/"chunked"/"reference"; the chunked path with the XLA state
  pass for "scan" (what "chunked" runs on every platform)."""
  if impl in gated_delta.STATE_PASSES:
    return gated_delta.gated_delta_rule_chunked(q, k, v, g, beta, initial_state=state,
                                                chunk_size=chunk_size, state_pass=impl)
  return ops.gated_delta_rule(q, k, v, g, beta, initial_state=state, chunk_size=chunk_size,
                              impl=impl)


@pytest.mark.parametrize("chunk_size,impl", [
    (1, "chunked"), (5, "scan"), (CHUNK, "auto"), (64, "chunked"),
])
def test_chunked_matches_reference(inputs, reference, chunk_size, impl):
  """37 tokens: not a multiple of 5 or 8 (padding must not move the final state); C = 64
  is longer than the sequence."""
  (q, k, v, g, beta), state = inputs
  o_ref, s_ref = reference
  o, s = run_impl(impl, q, k, v, g, beta, state, chunk_size)
  assert o.shape == v.shape and o.dtype == v.dtype
  assert s.shape == state.shape and s.dtype == jnp.float32
  assert relative_error(o, o_ref) < 1e-5
  assert relative_error(s, s_ref) < 1e-5


def test_zero_initial_state_by_default(inputs):
  (q, k, v, g, beta), state = inputs
  zeros = jnp.zeros_like(state)
  for impl in ("reference", "chunked"):
    o_zeros, s_zeros = ops.gated_delta_rule(q, k, v, g, beta, initial_state=zeros,
                                            chunk_size=CHUNK, impl=impl)
    o, s = ops.gated_delta_rule(q, k, v, g, beta, chunk_size=CHUNK, impl=impl)
    assert np.abs(o_zeros).max() > 0
    assert relative_error(o, o_zeros) < 1e-6 and relative_error(s, s_zeros) < 1e-6


def test_reference_is_the_written_equation(inputs):
  """S_t = (I - b k k^T) e^g S_{t-1} + b k v^T, o_t = S_t^T (scale q_t), in numpy; a custom
  scale reaches both paths."""
  (q, k, v, g, beta), state = inputs
  scale = 0.7
  o_ref, s_ref = ops.gated_delta_rule(q, k, v, g, beta, scale=scale, initial_state=state,
                                      impl="reference")
  o_chunked, _ = ops.gated_delta_rule(q, k, v, g, beta, scale=scale, initial_state=state,
                                      chunk_size=CHUNK)
  q, k, v, g, beta, s = (np.asarray(x, np.float64) for x in (q, k, v, g, beta, state))
  eye = np.eye(q.shape[-1])
  o = np.zeros_like(v)
  for t in range(q.shape[1]):
    decay = np.exp(g[:, t])[..., None, None]
    erase = eye - beta[:, t, :, None, None] * k[:, t, :, :, None] * k[:, t, :, None, :]
    write = beta[:, t, :, None, None] * k[:, t, :, :, None] * v[:, t, :, None, :]
    s = erase @ (decay * s) + write
    o[:, t] = np.einsum("bhkv,bhk->bhv", s, scale * q[:, t])
  assert relative_error(o_ref, o) < 1e-5 and relative_error(s_ref, s) < 1e-5
  assert relative_error(o_chunked, o) < 1e-5


def test_strong_decay_stays_finite(inputs):
  """g = -20 per token: cumulative log decays reach -160 in a chunk; exp(-G) would overflow."""
  (q, k, v, _, beta), state = inputs
  g = jnp.full(beta.shape, -20.0)
  o_ref, s_ref = ops.gated_delta_rule(q, k, v, g, beta, initial_state=state, impl="reference")
  o, s = ops.gated_delta_rule(q, k, v, g, beta, initial_state=state, chunk_size=CHUNK)
  assert np.isfinite(o).all() and np.isfinite(s).all()
  assert relative_error(o, o_ref) < 1e-5 and relative_error(s, s_ref) < 1e-5
  grads = loss_gradients(q, k, v, g, beta, state, jnp.ones_like(v), impl="chunked")
  for grad in grads:
    assert np.isfinite(grad).all() and np.abs(grad).max() > 0


@pytest.mark.parametrize("impl", ["reference", "chunked"])
def test_chained_steps_equal_full_pass(inputs, impl):
  (q, k, v, g, beta), state = inputs
  o_full, s_full = ops.gated_delta_rule(q, k, v, g, beta, initial_state=state,
                                        chunk_size=CHUNK, impl=impl)
  s = state
  for t in range(q.shape[1]):
    o_t, s = ops.gated_delta_step(q[:, t], k[:, t], v[:, t], g[:, t], beta[:, t], s)
    assert o_t.shape == v[:, t].shape and o_t.dtype == v.dtype
    assert relative_error(o_t, o_full[:, t]) < 1e-5, t
  assert s.dtype == jnp.float32
  assert relative_error(s, s_full) < 1e-5


def weighted_loss(q, k, v, g, beta, state, cotangent, impl):
  o, s = run_impl(impl, q, k, v, g, beta, state, CHUNK)
  return (o * cotangent).sum() + s.sum()


# One compiled gradient per impl, shared by the tests that use it.
loss_gradients = jax.jit(jax.grad(weighted_loss, tuple(range(6))), static_argnames="impl")


def test_chunked_gradients_match_reference_float32(inputs):
  (q, k, v, g, beta), state = inputs
  cotangent = jnp.asarray(np.random.default_rng(1).normal(size=v.shape), jnp.float32)
  args = (q, k, v, g, beta, state, cotangent)
  grads_ref = loss_gradients(*args, impl="reference")
  grads = loss_gradients(*args, impl="scan")
  for name, gr, gc in zip(("q", "k", "v", "g", "beta", "initial_state"), grads_ref, grads):
    assert relative_error(gc, gr) < 1e-5, name


@pytest.mark.parametrize("impl,chunk_size", [("reference", 3), ("chunked", 3)])
def test_float64_values_and_gradients_against_central_differences(impl, chunk_size):
  with jax.enable_x64(True):
    (q, k, v, g, beta), state = make_inputs(2, batch=1, seq_len=7, heads=2, key_dim=3,
                                            value_dim=2, dtype=np.float64)

    def gated_delta(q, k, v, g, beta, state):
      return ops.gated_delta_rule(q, k, v, g, beta, initial_state=state, chunk_size=chunk_size,
                                  impl=impl)

    o, s = gated_delta(q, k, v, g, beta, state)
    assert o.dtype == s.dtype == jnp.float64
    o_ref, s_ref = gated_delta_reference_float64(q, k, v, g, beta, state)
    assert relative_error(o, o_ref) < 1e-12 and relative_error(s, s_ref) < 1e-12
    # Against central differences, w.r.t. all six inputs: reverse mode (what training uses),
    # and forward mode for the chunked path, whose custom JVP rules serve both.
    modes = ("rev",) if impl == "reference" else ("fwd", "rev")
    check_grads(gated_delta, (q, k, v, g, beta, state), order=1, modes=modes,
                atol=1e-6, rtol=1e-6)


def gated_delta_reference_float64(q, k, v, g, beta, state):
  """Chained decode steps in float64 (the step keeps float64 too)."""
  outputs = []
  for t in range(q.shape[1]):
    o_t, state = ops.gated_delta_step(q[:, t], k[:, t], v[:, t], g[:, t], beta[:, t], state)
    assert o_t.dtype == state.dtype == jnp.float64
    outputs.append(o_t)
  return jnp.stack(outputs, axis=1), state


def test_bfloat16_inputs_close_to_float32(inputs, reference):
  (q, k, v, g, beta), state = inputs
  o_32, s_32 = reference
  bf16 = [x.astype(jnp.bfloat16) for x in (q, k, v, g, beta)]
  o, s = ops.gated_delta_rule(*bf16, initial_state=state, chunk_size=CHUNK)
  assert o.dtype == jnp.bfloat16 and s.dtype == jnp.float32
  assert relative_error(o, o_32) < 1e-2
  assert relative_error(s, s_32) < 1e-2


def test_vmap_over_an_extra_axis(inputs):
  (q, k, v, g, beta), state = inputs
  stacked = [jnp.stack([x[:1], x[1:]]) for x in (q, k, v, g, beta, state)]
  o, s = jax.vmap(lambda *a: ops.gated_delta_rule(*a[:5], initial_state=a[5],
                                                  chunk_size=CHUNK))(*stacked)
  o_full, s_full = ops.gated_delta_rule(q, k, v, g, beta, initial_state=state, chunk_size=CHUNK)
  assert relative_error(o.reshape(o_full.shape), o_full) < 1e-6
  assert relative_error(s.reshape(s_full.shape), s_full) < 1e-6


def test_chunked_backward_memory_grows_with_chunks_not_tokens():
  """Autodiff through the chunked path keeps a [K, V] state per chunk, not per token."""
  (q, k, v, g, beta), _ = make_inputs(3, batch=1, seq_len=512, heads=1, key_dim=64,
                                      value_dim=64)
  per_token_states_bytes = 512 * 64 * 64 * 4
  grad = jax.jit(jax.grad(
      lambda *a: ops.gated_delta_rule(*a, chunk_size=64)[0].sum(), range(5)))
  temp_bytes = grad.lower(q, k, v, g, beta).compile().memory_analysis().temp_size_in_bytes
  assert temp_bytes < per_token_states_bytes / 2


@pytest.mark.parametrize("field,bad_shape", [
    ("k", (2, 37, 3, 7)), ("v", (2, 36, 3, 5)), ("g", (2, 37, 3, 1)), ("beta", (2, 37)),
    ("initial_state", (2, 3, 5, 8)),
])
@pytest.mark.parametrize("impl", ["reference", "chunked"])
def test_bad_shapes_raise(inputs, field, bad_shape, impl):
  (q, k, v, g, beta), state = inputs
  args = dict(q=q, k=k, v=v, g=g, beta=beta, initial_state=state)
  args[field] = jnp.ones(bad_shape)
  with pytest.raises(ValueError, match=field):
    ops.gated_delta_rule(**args, impl=impl)


def test_bad_options_raise(inputs):
  (q, k, v, g, beta), state = inputs
  with pytest.raises(ValueError, match="q must"):
    ops.gated_delta_rule(q[0], k, v, g, beta)
  for chunk_size in (0, -4, 2.0):
    with pytest.raises(ValueError, match="chunk_size"):
      ops.gated_delta_rule(q, k, v, g, beta, chunk_size=chunk_size)
  for impl in ("triton", ""):
    with pytest.raises(ValueError, match="impl must be one of"):
      ops.gated_delta_rule(q, k, v, g, beta, impl=impl)
  with pytest.raises(ValueError, match="k must"):
    ops.gated_delta_rule(q, k.astype(jnp.int32), v, g, beta)
  with pytest.raises(ValueError, match="state"):
    ops.gated_delta_step(q[:, 0], k[:, 0], v[:, 0], g[:, 0], beta[:, 0], state[:, :, :2])
  with pytest.raises(ValueError, match="beta"):
    ops.gated_delta_step(q[:, 0], k[:, 0], v[:, 0], g[:, 0], beta, state)


# The Pallas kernels take K, V and the chunk size as powers of two >= 16.
KERNEL_SHAPE = dict(batch=2, seq_len=37, heads=2, key_dim=16, value_dim=32)
KERNEL_CHUNK = 16  # 37 tokens: two full chunks and a padded one.


@pytest.mark.parametrize("backward", gated_delta.PALLAS_BACKWARDS)
def test_pallas_matches_reference_values_and_gradients(backward):
  """impl="pallas" (the kernels; interpret mode on CPU): outputs, final state and every
  gradient (initial state included) against the token-by-token reference, gradients by
  either backward. Strong decay, bf16 and tilings: tests/pallas_kernels/gated_delta."""
  (q, k, v, g, beta), state = make_inputs(4, **KERNEL_SHAPE)
  cotangent = jnp.asarray(np.random.default_rng(5).normal(size=v.shape), jnp.float32)

  def loss(impl, *args):
    if impl == "pallas":
      o, s = gated_delta.gated_delta_rule_pallas(*args[:5], initial_state=args[5],
                                                 chunk_size=KERNEL_CHUNK, backward=backward)
    else:
      o, s = ops.gated_delta_rule(*args[:5], initial_state=args[5], impl=impl)
    return (o * cotangent).sum() + s.sum(), (o, s)

  args = (q, k, v, g, beta, state)
  grad = jax.grad(loss, argnums=tuple(range(1, 7)), has_aux=True)
  (grads, (o, s)), (grads_ref, (o_ref, s_ref)) = (jax.jit(grad, static_argnums=0)(impl, *args)
                                                  for impl in ("pallas", "reference"))
  assert o.dtype == v.dtype and s.dtype == jnp.float32
  assert relative_error(o, o_ref) < 1e-5 and relative_error(s, s_ref) < 1e-5
  for name, got, want in zip(("q", "k", "v", "g", "beta", "initial_state"), grads, grads_ref):
    assert np.isfinite(got).all() and np.abs(got).max() > 0, name
    assert relative_error(got, want) < 1e-5, name


def test_pallas_rejects_inputs_the_kernels_cannot_take(inputs):
  (q, k, v, g, beta), state = inputs  # K = 8
  with pytest.raises(ValueError, match="impl='pallas_gpu' cannot run these inputs: K must be"):
    ops.gated_delta_rule(q, k, v, g, beta, initial_state=state, impl="pallas")
  (q, k, v, g, beta), state = make_inputs(0, **KERNEL_SHAPE)
  with pytest.raises(ValueError, match="chunk_size must be a power of two >= 16, got 8"):
    ops.gated_delta_rule(q, k, v, g, beta, initial_state=state, chunk_size=8, impl="pallas")
  with pytest.raises(ValueError, match="impl must be one of"):  # no TPU kernel
    ops.gated_delta_rule(q, k, v, g, beta, initial_state=state, impl="pallas_tpu")


def test_auto_runs_the_kernels_on_gpu_where_they_were_timed_else_chunked(monkeypatch, inputs):
  (q, k, v, _, _), _ = inputs  # K = 8: the state kernel declines
  fits = make_inputs(0, **KERNEL_SHAPE)[0][:3]  # float32
  fits_bf16 = tuple(x.astype(jnp.bfloat16) for x in fits)
  assert gated_delta.resolve_impl("auto", *fits) == "chunked"
  assert gated_delta.resolve_impl("auto", *fits_bf16) == "chunked"  # CPU
  assert gated_delta.chunked_state_pass(*fits) == "scan"  # CPU
  monkeypatch.setattr(platform, "on_gpu", lambda: True)
  assert gated_delta.resolve_impl("auto", *fits_bf16, chunk_size=64) == "pallas_gpu"
  assert gated_delta.auto_kernel_unsupported(*fits_bf16, chunk_size=64) is None
  assert gated_delta.resolve_impl("auto", *fits_bf16, chunk_size=128) == "chunked"
  assert "chunk_size 64" in gated_delta.auto_kernel_unsupported(*fits_bf16, chunk_size=128)
  assert gated_delta.resolve_impl("auto", *fits, chunk_size=64) == "chunked"
  assert "16-bit" in gated_delta.auto_kernel_unsupported(*fits, chunk_size=64)
  assert gated_delta.resolve_impl("auto", q, k, v, chunk_size=64) == "chunked"  # K = 8
  assert gated_delta.resolve_impl("pallas", *fits) == "pallas_gpu"
  assert gated_delta.chunked_state_pass(*fits) == "pallas"
  assert gated_delta.chunked_state_pass(q, k, v) == "scan"
  with jax.enable_x64(True):
    assert gated_delta.chunked_state_pass(*(x.astype(jnp.float64) for x in fits)) == "scan"
