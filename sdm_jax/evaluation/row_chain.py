"""Probe: phase 2's chunk recurrence in one persistent launch with barriers, against
launches per chunk.

Phase 2 (`pallas_kernels.sparse_delta.scan_pallas`) launches each chunk's stages apart,
because a stage reads rows the stage before it wrote. The row-traffic probe
(`row_traffic.py`) found rows moved at 2.8-3.6 TB/s in one launch on the H200 and at
1.5-2.1 TB/s in launches per chunk, phase 2's own rate (WORKSPACE.md, issue 11, session
26). This probe asks how much of the difference a persistent kernel keeps when its stages
depend on each other. Per chunk c and table g ([G, N, D]; rows [n, G, M], distinct within
a chunk and group):

  gather   stacked[c, g, m] = table[g, rows[c, g, m]]
  scatter  table[g, rows[c, g, m]] = stacked[c, g, (m + block_rows) % M]

so each scatter writes rows that another program gathered, and chunk c + 1 gathers rows
that chunk c wrote. `chain_per_chunk` runs two launches per chunk in a `lax.scan`, as
phase 2 does; `chain_persistent` runs one launch, grid (programs, column slabs, G): the
`programs` of a (table, slab) share its row blocks and meet at a barrier after every stage
(an atomic counter per table and slab, then a spin until all have arrived). Only a
table's own programs depend on each other, since every column moves apart.

On the H200 at `sdm_small`'s layer shapes the persistent launch with 8 programs per table
and slab was 19-24% faster back to back than the launches per chunk, its results bitwise
equal (WORKSPACE.md, issue 11, session 32).

A spin barrier needs the programs it waits for to run at the same time. On a GPU they do
while one (table, slab)'s programs fit on the device at once (its programs are adjacent in
launch order, so earlier groups finish and make room); in interpret mode programs run one
after another, so there `programs` must be 1.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as pltriton
import jax.numpy as jnp

from pallas_kernels import platform
from sdm_jax.evaluation import row_traffic
from sdm_jax.evaluation import timing


class Tiling(NamedTuple):
  """One program's tile (rows x a column slab) and warps; `programs` per table and slab
  in the persistent launch."""
  block_rows: int = 128
  block_cols: int = 64   # phase 2's slab at Dv = 512
  num_warps: int = 4
  programs: int = 8


def _gather_block(table_ref, stacked_ref, rows_ref, c, g, block, cols0, tiling: Tiling):
  lines = pl.ds(block * tiling.block_rows, tiling.block_rows)
  cols = cols0 + jnp.arange(tiling.block_cols, dtype=jnp.int32)
  rows = pltriton.load(table_ref.at[g, rows_ref[c, g, lines][:, None], cols[None, :]])
  pltriton.store(stacked_ref.at[c, g, lines, pl.ds(cols0, tiling.block_cols)], rows)


def _scatter_block(table_ref, stacked_ref, rows_ref, c, g, block, blocks, cols0,
                   tiling: Tiling):
  lines = pl.ds(block * tiling.block_rows, tiling.block_rows)
  source = pl.ds(((block + 1) % blocks) * tiling.block_rows, tiling.block_rows)
  cols = cols0 + jnp.arange(tiling.block_cols, dtype=jnp.int32)
  values = pltriton.load(stacked_ref.at[c, g, source, pl.ds(cols0, tiling.block_cols)])
  pltriton.store(table_ref.at[g, rows_ref[c, g, lines][:, None], cols[None, :]], values)


def _stage_kernel(chunk_ref, rows_ref, table_in, stacked_in, table_ref, stacked_ref, *,
                  stage: str, blocks: int, tiling: Tiling):
  """grid (row blocks, column slabs, G): one stage of chunk chunk_ref[0] for one tile."""
  del table_in, stacked_in  # aliased to table_ref, stacked_ref
  block, g = pl.program_id(0), pl.program_id(2)
  cols0 = pl.program_id(1) * tiling.block_cols
  c = chunk_ref[0]
  if stage == "gather":
    _gather_block(table_ref, stacked_ref, rows_ref, c, g, block, cols0, tiling)
  else:
    _scatter_block(table_ref, stacked_ref, rows_ref, c, g, block, blocks, cols0, tiling)


def _persistent_kernel(rows_ref, table_in, stacked_in, arrivals_in, table_ref, stacked_ref,
                       arrivals_ref, *, blocks: int, num_chunks: int, tiling: Tiling,
                       interpret: bool):
  """grid (programs, column slabs, G): every chunk's two stages for this program's share of
  the row blocks, with a barrier of the table's and slab's programs after each stage."""
  del table_in, stacked_in, arrivals_in  # aliased to the refs after them
  part, slab, g = pl.program_id(0), pl.program_id(1), pl.program_id(2)
  cols0 = slab * tiling.block_cols
  share = blocks // tiling.programs
  counter = (g, slab)

  barrier = functools.partial(platform.group_barrier, arrivals_ref, counter, tiling.programs,
                              interpret=interpret)

  def chunk(c, carry):
    for j in range(share):
      _gather_block(table_ref, stacked_ref, rows_ref, c, g, part * share + j, cols0, tiling)
    barrier(2 * c + 1)
    for j in range(share):
      _scatter_block(table_ref, stacked_ref, rows_ref, c, g, part * share + j, blocks, cols0,
                     tiling)
    barrier(2 * c + 2)
    return carry

  lax.fori_loop(0, num_chunks, chunk, 0)


def _check(rows, table, tiling: Tiling) -> int:
  """Row blocks per chunk; raises ValueError for a tiling the probe cannot take."""
  per_chunk = rows.shape[-1]
  row_traffic.check_tile(per_chunk, table.shape[-1], tiling.block_rows, tiling.block_cols)
  blocks = per_chunk // tiling.block_rows
  if blocks % tiling.programs:
    raise ValueError(f"programs={tiling.programs} must divide the row blocks per chunk "
                     f"({blocks})")
  return blocks


def chain_per_chunk(rows, table, stacked, tiling: Tiling, interpret: bool | None = None):
  """(table, stacked) after every chunk's gather and scatter, two launches per chunk."""
  interpret = not platform.on_gpu() if interpret is None else interpret
  blocks = _check(rows, table, tiling._replace(programs=1))

  def launch(stage, c, table, stacked):
    kernel = functools.partial(_stage_kernel, stage=stage, blocks=blocks, tiling=tiling)
    return pl.pallas_call(
        kernel, name=f"row_chain_{stage}_kernel",
        out_shape=[jax.ShapeDtypeStruct(table.shape, table.dtype),
                   jax.ShapeDtypeStruct(stacked.shape, stacked.dtype)],
        grid=(blocks, table.shape[-1] // tiling.block_cols, table.shape[0]),
        input_output_aliases={2: 0, 3: 1}, interpret=interpret,
        compiler_params=pltriton.CompilerParams(num_warps=tiling.num_warps, num_stages=1),
    )(jnp.reshape(c, (1,)).astype(jnp.int32), rows, table, stacked)

  def step(carry, c):
    table, stacked = launch("gather", c, *carry)
    return launch("scatter", c, table, stacked), None

  return lax.scan(step, (table, stacked), jnp.arange(rows.shape[0]))[0]


def chain_persistent(rows, table, stacked, tiling: Tiling, interpret: bool | None = None):
  """`chain_per_chunk`'s result from one launch with barriers between the stages."""
  interpret = not platform.on_gpu() if interpret is None else interpret
  blocks = _check(rows, table, tiling)
  groups, slabs = table.shape[0], table.shape[-1] // tiling.block_cols
  arrivals = jnp.zeros((groups, slabs), jnp.int32)
  kernel = functools.partial(_persistent_kernel, blocks=blocks, num_chunks=rows.shape[0],
                             tiling=tiling, interpret=interpret)
  table, stacked, _ = pl.pallas_call(
      kernel, name="row_chain_persistent_kernel",
      out_shape=[jax.ShapeDtypeStruct(table.shape, table.dtype),
                 jax.ShapeDtypeStruct(stacked.shape, stacked.dtype),
                 jax.ShapeDtypeStruct(arrivals.shape, arrivals.dtype)],
      grid=(tiling.programs, slabs, groups),
      input_output_aliases={1: 0, 2: 1, 3: 2}, interpret=interpret,
      compiler_params=pltriton.CompilerParams(num_warps=tiling.num_warps, num_stages=1),
  )(rows, table, stacked, arrivals)
  return table, stacked


def distinct_rows(key, num_chunks: int, groups: int, per_chunk: int, num_slots: int):
  """[n, G, M] int32 rows, distinct within each chunk and table (so that no two programs
  of a scatter write the same row and the result does not depend on their order)."""
  scores = jax.random.uniform(key, (num_chunks, groups, num_slots))
  return jnp.argsort(scores, axis=-1)[..., :per_chunk].astype(jnp.int32)


def benchmark(*, groups: int, num_slots: int, value_dim: int, rows_per_chunk: int,
              num_chunks: int, dtype: str, tilings: list[Tiling], warmup: int,
              repeats: int, seed: int = 0) -> dict[str, Any]:
  """Per tiling, ms and GB/s (bytes read plus written: 4 x rows x D x itemsize) of the
  chain per chunk and persistent, and whether the persistent launch left the same table
  and stacked rows (bitwise) as the launches per chunk."""
  keys = jax.random.split(jax.random.key(seed), 3)
  table = jax.random.normal(keys[0], (groups, num_slots, value_dim), jnp.float32).astype(dtype)
  rows = distinct_rows(keys[1], num_chunks, groups, rows_per_chunk, num_slots)
  stacked = jnp.zeros((num_chunks, groups, rows_per_chunk, value_dim), dtype)
  moved_bytes = 4 * rows.size * value_dim * jnp.dtype(dtype).itemsize
  result: dict[str, Any] = {"groups": groups, "num_slots": num_slots, "value_dim": value_dim,
                            "rows_per_chunk": rows_per_chunk, "num_chunks": num_chunks,
                            "dtype": dtype, "moved_bytes": int(moved_bytes), "timings": []}
  for tiling in tilings:
    outputs = {}
    for name, chain in (("per_chunk", chain_per_chunk), ("persistent", chain_persistent)):
      jitted = jax.jit(functools.partial(chain, tiling=tiling), donate_argnums=(1, 2))
      outputs[name] = jitted(rows, jnp.copy(table), jnp.copy(stacked))
      state = {"args": (jnp.copy(table), jnp.copy(stacked))}

      def call(jitted=jitted, state=state):  # in place: each call donates the last's result
        state["args"] = jitted(rows, *state["args"])
        return state["args"]

      stats = timing.time_call(call, warmup=warmup, repeats=repeats)
      result["timings"].append({
          "case": f"{name} " + " ".join(f"{k}={v}" for k, v in tiling._asdict().items()),
          "ms": stats["median_ms"], "back_to_back_ms": stats["back_to_back_ms"],
          "gb_per_s": moved_bytes / (stats["median_ms"] * 1e-3) / 1e9})
    result["timings"][-1]["same_as_per_chunk"] = all(
        bool(jnp.array_equal(a, b)) for a, b in zip(outputs["persistent"], outputs["per_chunk"]))
  return result
