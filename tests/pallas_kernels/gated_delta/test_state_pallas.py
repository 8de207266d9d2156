"""The gated delta state kernel against its XLA twin: start states, final state, gradients.

On CPU the kernels run in interpret mode; the `gpu` test compiles them with Triton.
"""

from __future__ import annotations

import functools

import jax
from jax import lax
import jax.numpy as jnp
import numpy as np
import pytest

from pallas_kernels.gated_delta import state_pallas
from pallas_kernels.gated_delta import state_xla

interpret_on_cpu = pytest.mark.skipif(
    jax.default_backend() == "gpu", reason="interpret-mode semantics tests run on CPU")


def _recurrence(seed, *, chunks, lead, key_dim, value_dim):
  """A contracting random recurrence (transitions of norm < 1, as GDN's are)."""
  rng = np.random.default_rng(seed)
  transition = rng.standard_normal((chunks, *lead, key_dim, key_dim)) / (2 * np.sqrt(key_dim))
  update = rng.standard_normal((chunks, *lead, key_dim, value_dim))
  initial = rng.standard_normal((*lead, key_dim, value_dim))
  return tuple(jnp.asarray(x, jnp.float32) for x in (transition, update, initial))


def _values_and_grads(states, args, seed):
  shapes = jax.eval_shape(states, *args)
  rng = np.random.default_rng(seed)
  cotangents = [jnp.asarray(rng.standard_normal(s.shape), jnp.float32) for s in shapes]

  def loss(*args):
    return sum(jnp.sum(x * c) for x, c in zip(states(*args), cotangents))

  return jax.jit(states)(*args), jax.jit(jax.grad(loss, argnums=(0, 1, 2)))(*args)


def _relative_error(got, want):
  got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
  return np.linalg.norm(got - want) / np.linalg.norm(want)


def _compare(kernel, args, tol, seed=1):
  twin = functools.partial(state_xla.chunk_states, precision=lax.Precision.HIGHEST)
  (got, got_grads), (want, want_grads) = (_values_and_grads(kernel, args, seed),
                                          _values_and_grads(twin, args, seed))
  for name, a, b in zip(("start states", "final state"), got, want):
    assert a.shape == b.shape and a.dtype == b.dtype, name
    assert _relative_error(a, b) < tol, (name, _relative_error(a, b))
  for name, a, b in zip(("d transition", "d update", "d initial state"), got_grads,
                        want_grads):
    assert a.shape == b.shape, name
    assert _relative_error(a, b) < tol, (name, _relative_error(a, b))


@interpret_on_cpu
@pytest.mark.parametrize("chunks,lead,block_v", [
    (5, (2, 3), 16),   # two column slabs, batch and head axes
    (1, (2,), 32),     # one chunk, one slab
    (9, (), 16),       # no lead axes
])
def test_kernel_matches_xla_twin(chunks, lead, block_v):
  args = _recurrence(0, chunks=chunks, lead=lead, key_dim=16, value_dim=32)
  kernel = functools.partial(state_pallas.chunk_states, block_v=block_v, interpret=True)
  _compare(kernel, args, 1e-6)


@pytest.mark.parametrize("shapes,match", [
    (dict(key_dim=12, value_dim=32), "K must be a power of two"),
    (dict(key_dim=16, value_dim=24), "V must be a multiple of 16"),
])
def test_rejects_shapes_it_cannot_take(shapes, match):
  args = _recurrence(2, chunks=2, lead=(1,), **shapes)
  with pytest.raises(ValueError, match=match):
    state_pallas.chunk_states(*args, interpret=True)


def test_rejects_bad_block_v_and_mismatched_shapes():
  transition, update, initial = _recurrence(3, chunks=2, lead=(1,), key_dim=16, value_dim=32)
  with pytest.raises(ValueError, match="block_v"):
    state_pallas.chunk_states(transition, update, initial, block_v=24, interpret=True)
  with pytest.raises(ValueError, match="initial_state"):
    state_pallas.chunk_states(transition, update, initial[..., :16], interpret=True)
  with pytest.raises(ValueError, match="transition"):
    state_pallas.chunk_states(transition[..., :8], update, initial, interpret=True)
  with pytest.raises(ValueError, match="f32_passes must be 1"):
    state_pallas.chunk_states(transition, update, initial, f32_passes=2, interpret=True)
  with pytest.raises(ValueError, match="num_stages must be >= 1"):
    state_pallas.adjoint_states(transition.reshape(2, 1, 16, 16), update.reshape(2, 1, 16, 32),
                                initial.reshape(1, 16, 32), block_v=16, num_stages=0,
                                interpret=True)


def test_rejects_float64():
  with jax.enable_x64(True):
    args = [x.astype(jnp.float64) for x in _recurrence(4, chunks=2, lead=(1,), key_dim=16,
                                                       value_dim=16)]
    with pytest.raises(ValueError, match="float32"):
      state_pallas.chunk_states(*args, interpret=True)


@pytest.mark.gpu
def test_compiled_kernel_matches_xla_twin():
  # gdn_small's shape: 64 chunks of a 4096-token sequence, B x H = 16, K = 64, V = 128.
  args = _recurrence(5, chunks=64, lead=(4, 4), key_dim=64, value_dim=128)
  _compare(state_pallas.chunk_states, args, 1e-5)
  # One TF32 pass and a pipelined chunk loop: TF32's 2^-11 rounding, carried over 64 chunks.
  _compare(functools.partial(state_pallas.chunk_states, f32_passes=1, num_stages=2), args,
           1e-2)
