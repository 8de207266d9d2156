"""Tests of `pallas_kernels.platform`: the counter steps in interpret mode (on a GPU they
spin; the kernels that use them have compiled tests) and the fused multiply-add."""

import jax
from jax.experimental import pallas as pl
import jax.numpy as jnp
import numpy as np
import pytest

from pallas_kernels import platform


def _waits(ahead: int):
  """grid (4,): program i waits until the counter reaches i + ahead, then signals it. Returns
  (counter [1], stalls [1], the count each program's signal returned [4])."""
  def kernel(counter_in, stalls_in, counter_ref, stalls_ref, seen_ref):
    del counter_in, stalls_in  # updated in place through their outputs
    i = pl.program_id(0)
    platform.wait_until(counter_ref, 0, i + ahead, True, stalls=(stalls_ref, 0))
    seen_ref[i] = platform.signal(counter_ref, 0, True)

  ints = lambda n: jax.ShapeDtypeStruct((n,), jnp.int32)  # noqa: E731
  zeros = jnp.zeros((1,), jnp.int32)
  return pl.pallas_call(kernel, grid=(4,), interpret=True,
                        out_shape=[ints(1), ints(1), ints(4)],
                        input_output_aliases={0: 0, 1: 1})(zeros, zeros)


@pytest.mark.parametrize("ahead,stalls", [(0, 0), (-1, 0), (1, 4)])
def test_wait_until_counts_the_waits_interpret_mode_could_not_satisfy(ahead, stalls):
  """Waiting for the earlier programs' signals never stalls; waiting for one more (a later
  program's) stalls every time; each signal returns the count before it."""
  counter, stall_count, seen = _waits(ahead)
  assert int(counter[0]) == 4 and int(stall_count[0]) == stalls
  np.testing.assert_array_equal(seen, np.arange(4))


def test_group_barrier_takes_one_program_in_interpret_mode():
  with pytest.raises(ValueError, match="cannot run in interpret mode"):
    platform.group_barrier(None, 0, 2, 1, interpret=True)


def _fused_multiply_add(a, b, c, interpret: bool):
  """A kernel of one `platform.fused_multiply_add` over whole blocks: a [8, 1], b and c
  [8, 16]."""
  def kernel(a_ref, b_ref, c_ref, out_ref):
    out_ref[...] = platform.fused_multiply_add(a_ref[...], b_ref[...], c_ref[...], interpret)

  return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(c.shape, jnp.float32),
                        interpret=interpret)(a, b, c)


def _fma_operands():
  rng = np.random.default_rng(3)
  return [jnp.asarray(rng.standard_normal(shape), jnp.float32)
          for shape in ((8, 1), (8, 16), (8, 16))]


@pytest.mark.skipif(jax.default_backend() == "gpu", reason="interpret mode runs on CPU")
def test_fused_multiply_add_is_a_times_b_plus_c_in_interpret_mode():
  a, b, c = _fma_operands()
  np.testing.assert_array_equal(_fused_multiply_add(a, b, c, True), a * b + c)


@pytest.mark.gpu
def test_compiled_fused_multiply_add_rounds_once():
  """On a GPU (inline PTX `fma.rn.f32`): the exact a * b + c (float64 holds the product
  exactly) rounded to float32."""
  a, b, c = _fma_operands()
  exact = (np.asarray(a, np.float64) * np.asarray(b, np.float64)
           + np.asarray(c, np.float64))
  np.testing.assert_allclose(_fused_multiply_add(a, b, c, False), exact.astype(np.float32),
                             rtol=1e-7, atol=0)
