"""The chained-rows probe: both launch forms against numpy (interpret mode, one program per
table and slab off the GPU), its checks, and the barrier kernel's lowering for a GPU."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sdm_jax.evaluation import row_chain

CHUNKS, GROUPS, PER_CHUNK, SLOTS, WIDTH = 3, 2, 8, 32, 16
TILING = row_chain.Tiling(block_rows=4, block_cols=8, num_warps=1, programs=1)


def _inputs():
  keys = jax.random.split(jax.random.key(3), 2)
  table = jax.random.normal(keys[0], (GROUPS, SLOTS, WIDTH))
  rows = row_chain.distinct_rows(keys[1], CHUNKS, GROUPS, PER_CHUNK, SLOTS)
  return table, rows, jnp.zeros((CHUNKS, GROUPS, PER_CHUNK, WIDTH))


def _expected(table, rows):
  table, rows = np.asarray(table).copy(), np.asarray(rows)
  stacked = np.zeros((CHUNKS, GROUPS, PER_CHUNK, WIDTH), np.float32)
  for c in range(CHUNKS):
    for g in range(GROUPS):
      stacked[c, g] = table[g, rows[c, g]]
      # Each block writes the rows the next block gathered.
      table[g, rows[c, g]] = np.roll(stacked[c, g], -TILING.block_rows, axis=0)
  return table, stacked


@pytest.mark.parametrize("chain", [row_chain.chain_per_chunk, row_chain.chain_persistent])
def test_each_launch_form_gathers_then_scatters_chunk_after_chunk(chain):
  table, rows, stacked = _inputs()
  assert all(len(set(r)) == PER_CHUNK for r in np.asarray(rows).reshape(-1, PER_CHUNK))
  got_table, got_stacked = chain(rows, table, stacked, TILING, interpret=True)
  want_table, want_stacked = _expected(table, rows)
  np.testing.assert_array_equal(np.asarray(got_stacked), want_stacked)
  np.testing.assert_array_equal(np.asarray(got_table), want_table)
  assert not np.array_equal(want_table, np.asarray(table))  # the chunks did write


def test_tilings_it_cannot_take_are_named():
  table, rows, stacked = _inputs()
  with pytest.raises(ValueError, match="block_rows=3"):
    row_chain.chain_per_chunk(rows, table, stacked, TILING._replace(block_rows=3),
                              interpret=True)
  with pytest.raises(ValueError, match="programs=3 must divide"):
    row_chain.chain_persistent(rows, table, stacked, TILING._replace(programs=3),
                               interpret=True)
  with pytest.raises(ValueError, match="cannot run in interpret mode"):
    row_chain.chain_persistent(rows, table, stacked, TILING._replace(programs=2),
                               interpret=True)


def test_the_barrier_kernel_lowers_for_a_gpu():
  """`sdm_small`'s layer shapes, 8 programs per table and slab (the spin only compiles
  for a GPU; it never runs off one)."""
  rows = jax.ShapeDtypeStruct((128, 16, 1024), jnp.int32)
  table = jax.ShapeDtypeStruct((16, 16384, 512), jnp.bfloat16)
  stacked = jax.ShapeDtypeStruct((128, 16, 1024, 512), jnp.bfloat16)
  chain = lambda r, t, s: row_chain.chain_persistent(  # noqa: E731
      r, t, s, row_chain.Tiling(), interpret=False)
  lowered = jax.jit(chain).trace(rows, table, stacked).lower(lowering_platforms=("cuda",))
  assert lowered.as_text().count("__gpu$xla.gpu.triton") == 1


def test_benchmark_reports_both_forms_and_whether_they_agree():
  result = row_chain.benchmark(groups=2, num_slots=32, value_dim=16, rows_per_chunk=8,
                               num_chunks=2, dtype="float32", tilings=[TILING], warmup=0,
                               repeats=1)
  per_chunk, persistent = result["timings"]
  assert per_chunk["case"].startswith("per_chunk") and persistent["case"].startswith("persistent")
  assert all(t["ms"] > 0 and t["gb_per_s"] > 0 for t in result["timings"])
  assert persistent["same_as_per_chunk"] is True
  assert result["moved_bytes"] == 4 * 2 * 2 * 8 * 16 * 4
