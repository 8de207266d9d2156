"""What this device gives for phase 2's access pattern: random table rows in column slabs.

Phase 2's kernels (`pallas_kernels.sparse_delta.scan_pallas`) spend their time moving
table rows: at `sdm_small`'s layer, 1 KB bf16 rows of [B*H, N, Dv] tables, picked at random
by slot, in slabs of 64 columns (128 bytes) per program, one launch per chunk. This probe
times that access pattern with nothing else in the kernel, so that phase 2's effective
bandwidth can be set against what the device gives for it:

  gather   out[g, m] = table[g, rows[g, m]]        random rows in, contiguous rows out
  scatter  table[g, rows[g, m]] = values[g, m]     contiguous rows in, random rows out
  copy     out[g, m] = source[g, m]                the streaming ceiling, same bytes

each as one launch over all rows ("whole") and as one launch per chunk of rows inside a
`lax.scan` (`num_chunks` launches, as phase 2 runs), for several column slabs. Rows are
drawn with replacement; at 1,024 of 16,384 per chunk a few repeat, as slots do.
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
from sdm_jax.evaluation import timing

MODES = ("gather", "scatter", "copy")


class Tiling(NamedTuple):
  """One program's tile: rows x columns (a column slab), and its warps."""
  block_rows: int = 128
  block_cols: int = 64   # phase 2's slab at Dv = 512
  num_warps: int = 4


def _kernel(chunk_ref, rows_ref, source_ref, dest_in_ref, dest_ref, *, mode: str,
            block_rows: int, block_cols: int, blocks_per_chunk: int | None):
  """grid (groups, row blocks, column slabs): moves one [block_rows, block_cols] tile of
  rows between source and dest (aliased to dest_in) as `mode` says; of chunk chunk_ref[0],
  or where blocks_per_chunk is given, of the chunk that row block belongs to."""
  del dest_in_ref
  g, block = pl.program_id(0), pl.program_id(1)
  if blocks_per_chunk is None:
    c, first = chunk_ref[0], block * block_rows
  else:
    c, first = block // blocks_per_chunk, (block % blocks_per_chunk) * block_rows
  cols0 = pl.program_id(2) * block_cols
  cols = cols0 + jnp.arange(block_cols, dtype=jnp.int32)
  lines, slab = pl.ds(first, block_rows), pl.ds(cols0, block_cols)
  stacked = (c, g, lines, slab)  # the tile's place in an [n, G, M, D] buffer
  if mode == "copy":
    pltriton.store(dest_ref.at[stacked], pltriton.load(source_ref.at[stacked]))
    return
  in_table = (g, rows_ref[c, g, lines][:, None], cols[None, :])  # its rows of a [G, N, D] table
  if mode == "gather":
    pltriton.store(dest_ref.at[stacked], pltriton.load(source_ref.at[in_table]))
  else:
    pltriton.store(dest_ref.at[in_table], pltriton.load(source_ref.at[stacked]))


def check_tile(per_chunk: int, value_dim: int, block_rows: int, block_cols: int) -> None:
  """Raises ValueError unless the tile divides the rows per chunk and the row width."""
  if per_chunk % block_rows or value_dim % block_cols:
    raise ValueError(f"block_rows={block_rows} must divide the rows per chunk ({per_chunk}) "
                     f"and block_cols={block_cols} the row width ({value_dim})")


def move_rows(rows, source, dest, chunk=None, *, mode: str, block_rows: int, block_cols: int,
              num_warps: int = 4, interpret: bool | None = None):
  """One launch moving the rows of chunk `chunk` of `rows` [n, G, M] int32, or of every
  chunk if `chunk` is None; returns dest updated in place.

  gather: source = table [G, N, D], dest [n, G, M, D]; scatter: source [n, G, M, D], dest
  = table [G, N, D]; copy: source and dest [n, G, M, D]. M must be a multiple of
  block_rows and D of block_cols.
  """
  if mode not in MODES:
    raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
  num_chunks, groups, per_chunk = rows.shape
  value_dim = source.shape[-1]
  check_tile(per_chunk, value_dim, block_rows, block_cols)
  if interpret is None:
    interpret = not platform.on_gpu()
  blocks = per_chunk // block_rows
  kernel = functools.partial(_kernel, mode=mode, block_rows=block_rows, block_cols=block_cols,
                             blocks_per_chunk=None if chunk is not None else blocks)
  return pl.pallas_call(
      kernel,
      name=f"row_{mode}_kernel",
      out_shape=jax.ShapeDtypeStruct(dest.shape, dest.dtype),
      grid=(groups, blocks * (1 if chunk is not None else num_chunks), value_dim // block_cols),
      input_output_aliases={3: 0},
      interpret=interpret,
      compiler_params=pltriton.CompilerParams(num_warps=num_warps, num_stages=1),
  )(jnp.reshape(0 if chunk is None else chunk, (1,)).astype(jnp.int32), rows, source, dest)


def move_all_chunks(rows, source, dest, *, per_chunk_launches: bool, **kwargs):
  """`move_rows` over every chunk: one launch per chunk in a `lax.scan` (as phase 2 runs),
  or one launch for all of them."""
  if not per_chunk_launches:
    return move_rows(rows, source, dest, None, **kwargs)

  def step(dest, c):
    return move_rows(rows, source, dest, c, **kwargs), None

  return lax.scan(step, dest, jnp.arange(rows.shape[0]))[0]


def benchmark(*, groups: int, num_slots: int, value_dim: int, rows_per_chunk: int,
              num_chunks: int, dtype: str, tilings: list[Tiling],
              warmup: int, repeats: int, seed: int = 0) -> dict[str, Any]:
  """Times gather, scatter and copy for each tiling,
  whole and per chunk, and XLA's gather of the same rows; GB/s count bytes read plus
  bytes written (2 x rows x D x itemsize)."""
  keys = jax.random.split(jax.random.key(seed), 3)
  table = jax.random.normal(keys[0], (groups, num_slots, value_dim), jnp.float32).astype(dtype)
  rows = jax.random.randint(keys[1], (num_chunks, groups, rows_per_chunk), 0, num_slots,
                            jnp.int32)
  stacked = jax.random.normal(keys[2], (num_chunks, groups, rows_per_chunk, value_dim),
                              jnp.float32).astype(dtype)
  moved_bytes = 2 * rows.size * value_dim * jnp.dtype(dtype).itemsize
  result: dict[str, Any] = {"groups": groups, "num_slots": num_slots, "value_dim": value_dim,
                            "rows_per_chunk": rows_per_chunk, "num_chunks": num_chunks,
                            "dtype": dtype, "moved_bytes": int(moved_bytes), "timings": []}

  def record(name, fn, *args):
    jitted = jax.jit(fn, donate_argnums=(0,))
    state = {"dest": args[0]}

    def call():
      state["dest"] = jitted(state["dest"], *args[1:])
      return state["dest"]

    stats = timing.time_call(call, warmup=warmup, repeats=repeats)
    ms = stats["median_ms"]
    result["timings"].append({"case": name, "ms": ms,
                              "gb_per_s": moved_bytes / (ms * 1e-3) / 1e9})

  for tiling in tilings:
    kw = tiling._asdict()
    for per_chunk in (False, True):
      where = "per_chunk" if per_chunk else "whole"
      for mode in MODES:
        source = table if mode == "gather" else stacked
        dest = table if mode == "scatter" else stacked
        fn = lambda d, s, r, m=mode, p=per_chunk: move_all_chunks(  # noqa: E731
            r, s, d, per_chunk_launches=p, mode=m, **kw)
        record(f"{mode} {where} rows={tiling.block_rows} cols={tiling.block_cols} "
               f"warps={tiling.num_warps}", fn, jnp.copy(dest), source, rows)
  # XLA's gather of the same rows into a new buffer (the donated one is dropped).
  record("gather whole xla", lambda d, t, r: jax.vmap(
      lambda tab, i: tab[i], in_axes=(0, 1), out_axes=1)(t, r), jnp.copy(stacked), table, rows)
  return result
