"""The race check the TPU kernel tests rely on sees a race when there is one.

Two programs of a "parallel" grid dimension, interpreted on two simulated cores, copy
their rows into the same HBM row: a race. Copying into a row of their own is not.
"""

from __future__ import annotations

import jax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
import jax.numpy as jnp
import numpy as np
import pytest

from tests.pallas_kernels import tpu_interpret


def _copy_rows(rows: np.ndarray, target_of_program):
  """Program i copies row i of `rows` into row target_of_program(i) of a zero table."""
  def kernel(rows_ref, table_ref, sem):
    i = pl.program_id(0)
    copy = pltpu.make_async_copy(rows_ref.at[pl.ds(i, 1)],
                                 table_ref.at[pl.ds(target_of_program(i), 1)], sem.at[0])
    copy.start()
    copy.wait()

  return pl.pallas_call(
      kernel,
      grid=(rows.shape[0],),
      in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
      out_specs=pl.BlockSpec(memory_space=pl.ANY),
      out_shape=jax.ShapeDtypeStruct(rows.shape, rows.dtype),
      scratch_shapes=[pltpu.SemaphoreType.DMA((1,))],
      compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
      interpret=tpu_interpret.RACE_CHECKED,
  )(jnp.asarray(rows))


@pytest.mark.parametrize("target,racy", [(lambda i: i, False), (lambda i: 0 * i, True)])
def test_the_race_detector_sees_two_programs_writing_one_row(target, racy):
  rows = np.random.default_rng(0).standard_normal((2, 128)).astype(np.float32)
  if racy:
    pltpu.reset_tpu_interpret_mode_state()
    jax.block_until_ready(_copy_rows(rows, target))
    assert tpu_interpret.races_found()
  else:
    table = tpu_interpret.assert_no_races(lambda r: _copy_rows(r, target), rows)
    np.testing.assert_array_equal(table, rows)
