"""The row-traffic probe moves the rows it says it moves (interpret mode off the GPU)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sdm_jax.evaluation import row_traffic

CHUNKS, GROUPS, PER_CHUNK, SLOTS, WIDTH = 3, 2, 8, 32, 16


def _inputs():
  keys = jax.random.split(jax.random.key(7), 3)
  table = jax.random.normal(keys[0], (GROUPS, SLOTS, WIDTH))
  # Distinct rows per (chunk, group), so the scatter's result does not depend on order.
  rows = jnp.stack([jnp.stack([jax.random.permutation(jax.random.fold_in(keys[1], 10 * c + g),
                                                      SLOTS)[:PER_CHUNK]
                               for g in range(GROUPS)]) for c in range(CHUNKS)])
  stacked = jax.random.normal(keys[2], (CHUNKS, GROUPS, PER_CHUNK, WIDTH))
  return table, rows.astype(jnp.int32), stacked


@pytest.mark.parametrize("per_chunk_launches", [False, True])
@pytest.mark.parametrize("mode", row_traffic.MODES)
def test_moves_the_rows_it_names(mode, per_chunk_launches):
  table, rows, stacked = _inputs()
  source = table if mode == "gather" else stacked
  dest = table if mode == "scatter" else jnp.zeros_like(stacked)
  moved = row_traffic.move_all_chunks(rows, source, dest, per_chunk_launches=per_chunk_launches,
                                      mode=mode, block_rows=4, block_cols=8, interpret=True)
  t, r, s = map(np.asarray, (table, rows, stacked))
  if mode == "gather":
    expected = np.stack([t[g][r[:, g]] for g in range(GROUPS)], axis=1)
  elif mode == "scatter":
    expected = t.copy()
    for c in range(CHUNKS):
      for g in range(GROUPS):
        expected[g, r[c, g]] = s[c, g]
  else:
    expected = s
  np.testing.assert_array_equal(np.asarray(moved), expected)


def test_tiles_must_divide_the_rows_and_columns():
  table, rows, stacked = _inputs()
  with pytest.raises(ValueError, match="block_rows=3"):
    row_traffic.move_rows(rows, table, stacked, 0, mode="gather", block_rows=3, block_cols=8,
                          interpret=True)
  with pytest.raises(ValueError, match="mode must be one of"):
    row_traffic.move_rows(rows, table, stacked, 0, mode="add", block_rows=4, block_cols=8,
                          interpret=True)


def test_benchmark_reports_every_case():
  result = row_traffic.benchmark(groups=2, num_slots=64, value_dim=16, rows_per_chunk=8,
                                 num_chunks=2, dtype="float32",
                                 tilings=[row_traffic.Tiling(4, 8, 1)], warmup=0, repeats=1)
  cases = [t["case"] for t in result["timings"]]
  assert len(cases) == 2 * len(row_traffic.MODES) + 1 and cases[-1] == "gather whole xla"
  assert all(t["ms"] > 0 and t["gb_per_s"] > 0 for t in result["timings"])
  assert result["moved_bytes"] == 2 * 2 * 2 * 8 * 16 * 4
