"""Tests of `pallas_kernels.platform`'s counter steps in interpret mode (on a GPU they spin;
the kernels that use them have compiled tests)."""

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
