"""pad_rows: zero rows up to MIN_ROWS, nothing else."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from sdm_jax.layers import decode_rows


def test_pad_rows_appends_zero_rows_only_below_the_minimum():
  x = jnp.arange(6, dtype=jnp.bfloat16).reshape(1, 1, 6) + 1
  padded = decode_rows.pad_rows(x)
  assert padded.shape == (decode_rows.MIN_ROWS, 1, 6) and padded.dtype == jnp.bfloat16
  np.testing.assert_array_equal(padded[:1], x)
  assert not np.asarray(padded[1:], np.float32).any()
  wide = jnp.ones((decode_rows.MIN_ROWS + 1, 1, 6))
  assert decode_rows.pad_rows(wide) is wide
