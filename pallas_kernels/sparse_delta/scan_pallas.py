"""Phase 2 of the chunked sparse delta rule with Pallas kernels (Triton on GPU).

Every coefficient of the plan is table-independent and the chunk update is linear in the
table and independent per value column (`scan_xla` states the math). Per chunk, inside one
`lax.scan` that carries the table (updated in place through `input_output_aliases`), the
forward runs three kernels, each over thousands of programs:

  gather   grid (B*H, token groups, column slabs):  r0[t] = sum_i wc[t,i] M[I_t[i]],
           out[t] = sum_j rc[t,j] M[J_t[j]]            (reads before the chunk's writes)
  dense    grid (B*H, 1, column slabs):  y = V - r0,  delta = S y,  out += QK delta
  scatter  grid (B*H, row tiles, column slabs):  M[s] = E[s] M[s] + sum_{u writes s}
           uc[u,s] delta[u], and a snapshot of the overwritten rows for the backward

The scatter sums over the tokens that wrote a slot, over slot-sorted entries (`layout.py`):
each program holds a tile of rows (slots) and adds, step by step, the k-th entry of every
row's own segment in float32; each slot belongs to one row tile, so no two programs write
the same bytes and nothing needs atomics. (Summing blocks of entries into their rows by
one-hot matmuls, the first way, made phase 2 1.2-1.3x slower on the H200: WORKSPACE.md.)
The backward walks the chunks in reverse with four kernels: gather (per token, the
end-of-chunk cotangent of its written rows), dense (d_delta = QK^T d_out + ..., d_y = S^T
d_delta), written rows (the start-of-chunk cotangent of each written slot) and read rows
(d_table[s] += sum rc d_out). It never writes the table: where the XLA twin undoes each
chunk's writes to recover the rows the chunk read, the read-rows kernel loads each such row
from the snapshot of the next chunk that wrote its slot (a per-slot index, `next_write`,
that the written-rows kernel keeps), or from the final table if none did. That saves the
restores' stores and a copy of the table (3% of phase 2 on the H200).
By default (`KernelConfig.backward_rows="union"`) those two run as one launch over the
union of the chunk's written and read slots, so a slot both written and read is loaded and
stored once; and the row-tile kernels cut their rows into tiles by segment length
(`KernelConfig.row_order="depth"`), so that the few deep segments of slots the chunk
reuses share a few tiles. Together 2.6 ms (5%) off `sdm_small`'s training step on the
H200 (WORKSPACE.md, issue 11, session 27). Their grids put the tiles on the slowest axis
(`KernelConfig.deepest_first`), so every slab's deepest tiles launch in the first wave
rather than the last slab's in the last (1 ms off the step on an H100, session 51). A
tile's per-row fields (slot, segment bounds, decay) are laid out in tile order
(`layout.row_tiles`), so it loads each as one contiguous block rather than through its
rows (0.3 ms off the step, session 28). A row tile past the
chunk's slots (the layouts are padded to C * W rows) returns at once.
Gradients of the plan's coefficients are sums over all columns: each program writes its
slab's partial sum and XLA adds the slabs afterwards.

Table rows that no later kernel of the chunk touches are moved with Triton's `evict_first`
L2 policy, so that the rows the next kernel reads again stay in L2 (`KernelConfig.l2_hints`;
3-4% off phase 2 on the H200).

The kernels take the plan stacked over chunks and a chunk-index operand, and write what the
backward keeps (snapshots, y, delta, gradients) into stacked buffers in place, so the scan
body is the kernels alone (no per-chunk slicing or stacking copies).

(A single persistent kernel per (sequence, slab) that loops over the chunks inside, the
first design, was as slow as the XLA scan on the H200: its programs wait on one chain of
dependent gathers each. So was, in session 33, one launch with 4 or 8 programs per
sequence and slab that shared its token groups and row tiles and met at atomic-counter
barriers between the stages: 0.3-0.6 ms slower in `sdm_small`'s step than the launches per
chunk. Nor, in session 34, one launch for the whole forward or backward that kept every short
program and replaced the launch boundaries by atomic counters (each program took a ticket
and waited only for the lower tickets' work it read): 0.7 ms slower for the forward, 7.5
ms for both; the ticket and counter atomics of the millions of programs per step cost more than
the boundaries. See WORKSPACE.md, issue 11, sessions 32-34.)

The table and its cotangent are stored in bfloat16 or float32 (the table's dtype; the
authors' layer also keeps both in bf16 in memory); rows are widened to float32 on load and
every sum accumulates in float32; the C x C products use TF32x3 (about float32; one TF32
pass with `KernelConfig.f32_dot_passes=1`: 0.6% faster phase 2 on the H200 at
layer B's shapes, within run-to-run spread, so not the default; WORKSPACE.md, session 17).
"""

from __future__ import annotations

import functools
from typing import Callable, NamedTuple

import jax
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as pltriton
import jax.numpy as jnp

from pallas_kernels import platform
from pallas_kernels.blocks import check_power_of_two_fields, is_power_of_two, next_power_of_two
from pallas_kernels.sparse_delta import batch_copies, layout
from pallas_kernels.sparse_delta.plan import ChunkCoefs, ChunkIds, ChunkPlan

TABLE_DTYPES = (jnp.dtype(jnp.float32), jnp.dtype(jnp.bfloat16))
# The outputs' dtypes the forward kernel stores (and the backward reads their cotangent in).
OUT_DTYPES = (jnp.dtype(jnp.float32), jnp.dtype(jnp.bfloat16), jnp.dtype(jnp.float16))
MAX_CHUNK = 256


class KernelConfig(NamedTuple):
  """Tiling of the phase-2 kernels (the int fields powers of two; `check_config`)."""
  block_cols: int = 64      # BD: value columns per program
  row_tile: int = 32        # rows (slots) per program of the row-tile kernels
  # Token-major entries per program of the gather kernels (at W = R = 64, one token each).
  # `sdm_small`'s step on the H200, back to back: 44.51 / 44.63 ms against 44.83 / 44.86 at
  # 128 in one call, 44.62 against 44.93 / 44.91 in another (WORKSPACE.md, sessions 33-34).
  group_entries: int = 64
  num_warps: int = 4
  num_stages: int = 1       # Triton software pipelining of the kernels' loops (1: none)
  # Chunks per iteration of the `lax.scan` over chunks (its `unroll`): each iteration also
  # costs a loop-counter copy and add (2 x 1.4 us per chunk on the H200, 0.74 ms of layer
  # B's 19.9 ms fwd+bwd), which unrolling divides. Phase 2 fwd+bwd on the H200 at unroll 1
  # / 2 / 4 / 8: 14.58 / 14.05 / 13.90 / 13.90 ms at layer B's shapes, 31.08 / 29.87 /
  # 29.70 / 29.53 ms at A's (WORKSPACE.md, session 16). `sdm_small`'s step on an H100
  # (16 chunks a sequence), back to back, two processes each: 42.00 / 42.05 ms at 16
  # against 42.20 / 42.21 at 4 (WORKSPACE.md, session 57).
  scan_unroll: int = 16
  # The dense kernels' C x C products: 3 = TF32x3 (about float32), 1 = one TF32 pass (what
  # XLA's default float32 matmuls give the twin; the GDN kernels' choice for 16-bit inputs).
  f32_dot_passes: int = 3
  # L2 eviction hints on the table rows (`L2_HINTS`). "stream": `evict_first` on the rows
  # no later kernel of the chunk touches (the forward's read rows, the snapshots, the
  # backward's read rows), so that the rows read again (the written rows between the
  # forward's gather and scatter, their cotangent rows between the backward's gather and
  # written-rows kernels) stay in L2; "stream_keep" also marks those rows `evict_last` on
  # their first read and `evict_first` on their last touch.
  # Phase 2 fwd+bwd at layer B's shapes on the H200: none 14.01-14.24 ms, stream
  # 13.64-13.81, stream_keep 13.40-13.81 (WORKSPACE.md, session 23).
  l2_hints: str = "stream_keep"
  # How the backward walks a chunk's rows: "separate" (the written-rows kernel, then the
  # read-rows kernel) or "union" (one launch over write row tiles and read row tiles, the
  # slots both written and read handled by the write tiles: `_bwd_union_kernel`).
  # `sdm_small`'s step on the H200: 48.34 / 48.37 ms against 48.68 / 48.72 (session 27).
  backward_rows: str = "union"
  # Which rows share a row tile: "slot" (rows in slot order, tile t = rows [t * row_tile,
  # ...)) or "depth" (rows by segment length, longest first). A tile's loops run as often as
  # its longest segment, so grouping deep rows makes most tiles shallow; the model's
  # addressing reuses slots within a chunk far more than uniform slots (WORKSPACE.md, issue
  # 11, session 26): at initialisation, depth order halves the loop steps of its tiles.
  # `sdm_small`'s step on the H200: 47.29 / 47.36 ms against 48.69 / 48.69 in slot order,
  # 46.08 / 46.16 with the union backward (session 27).
  row_order: str = "depth"
  # The backward's row kernels (union, or written and read) on their own column slabs and
  # warps (None: block_cols, num_warps). Their per-entry work (token and coefficient
  # loads, the coefficient gradients' stores and per-slab partial sums) is per slab, so
  # wider slabs do less of it; more warps keep the registers per thread.
  backward_rows_cols: int | None = None
  backward_rows_warps: int | None = None
  # The gather kernels (forward and backward) on warps of their own (None: num_warps). A
  # gather program has no loop: it loads its token's W rows at once and sums them over the
  # entries, which on 4 warps crosses warps through shared memory. XLA's build for the H200
  # (session 48), warp-instructions per program (registers, programs per SM) on 4 / 2 / 1
  # warps: forward 2,048 (40, 12) / 1,664 (64, 16) / 1,432 (96, 21); backward 1,600 (64,
  # 8) / 1,280 (96, 10) / 1,120 (168, 12). `sdm_small`'s step on the H200, back to back,
  # one round each in one call: 43.36 / 43.58 ms on 2 / 1 warps against 43.78 on 4
  # (WORKSPACE.md, issue 11, session 50).
  gather_warps: int | None = 2
  # The segment loops (`_segment_sums`) load the next step's entry tokens while this step's
  # token rows are gathered, so a step waits on one load instead of two in turn.
  # `sdm_small`'s step on the H200, back to back: 44.18 / 44.26 ms against 44.54 / 44.60
  # without, in one call; 44.46 against 44.78 / 44.81 in another (WORKSPACE.md, session 34).
  prefetch_entries: bool = True
  # The row-tile kernels' grid order. True: (B*H, slabs, tiles); the GPU launches grid
  # axis 0 fastest and axis 2 slowest, so every slab's tile t goes before any slab's tile
  # t + 1: the deepest tiles (`row_order="depth"` puts them first) start first and the
  # shallow and empty ones fill the tail (the union alternates write and read tiles:
  # `_union_tile`). False: (B*H, tiles, slabs), every tile of slab 0 first, so the last
  # slab's deepest tiles start in the last wave and the launch waits on their chains of
  # steps. `sdm_small`'s step on an H100, back to back, two rounds in one session: 44.68 /
  # 44.73 ms against 45.64 / 45.72 (WORKSPACE.md, issue 11, session 51).
  deepest_first: bool = True

  def gather_config(self) -> "KernelConfig":
    """The config the gather kernels run with."""
    return self._replace(num_warps=self.gather_warps or self.num_warps)

  def backward_rows_config(self) -> "KernelConfig":
    """The config the backward's row kernels run with."""
    return self._replace(
        block_cols=self.backward_rows_cols or self.block_cols,
        num_warps=self.backward_rows_warps or self.num_warps)


# KernelConfig.l2_hints -> the eviction policy of each role of a row load or store: "once"
# (no later kernel of the chunk touches the row), "again" (the first read of a row that the
# next kernel reads again), "last" (the last touch of such a row).
L2_HINTS = {
    "none": {},
    "stream": {"once": "evict_first"},
    "stream_keep": {"once": "evict_first", "again": "evict_last", "last": "evict_first"},
}


BACKWARD_ROWS = ("separate", "union")
ROW_ORDERS = layout.ROW_ORDERS


def _eviction(config: KernelConfig, role: str) -> str | None:
  return L2_HINTS[config.l2_hints].get(role)


def table_limits(*, value_dim: int, table_dtype, accumulation) -> str | None:
  """Why a kernel that moves table rows in column slabs (these and the decode step's)
  cannot take this table, or None if it can."""
  if jnp.dtype(table_dtype) not in TABLE_DTYPES:
    return f"the table must be float32 or bfloat16, got {jnp.dtype(table_dtype).name}"
  if jnp.dtype(accumulation) != jnp.float32:
    return f"inputs must accumulate in float32, got {jnp.dtype(accumulation).name} (float64?)"
  if value_dim % 16:
    return f"Dv must be a multiple of 16, got {value_dim}"
  return None


def kernel_limits(*, chunk: int, value_dim: int, table_dtype, plan_dtype) -> str | None:
  """Why the kernels cannot take these shapes, or None if they can."""
  reason = table_limits(value_dim=value_dim, table_dtype=table_dtype, accumulation=plan_dtype)
  if reason:
    return reason
  if not is_power_of_two(chunk) or not 16 <= chunk <= MAX_CHUNK:
    return f"the chunk length must be a power of two in [16, {MAX_CHUNK}], got {chunk}"
  return None


def check_config(config: KernelConfig, value_dim: int) -> None:
  """Raises ValueError naming the field of `config` that these kernels cannot take."""
  check_power_of_two_fields(config, ("block_cols", "row_tile", "group_entries", "num_warps"))
  if config.backward_rows not in BACKWARD_ROWS:
    raise ValueError(f"KernelConfig.backward_rows must be one of {BACKWARD_ROWS}, got "
                     f"{config.backward_rows!r}")
  if config.row_order not in ROW_ORDERS:
    raise ValueError(f"KernelConfig.row_order must be one of {ROW_ORDERS}, got "
                     f"{config.row_order!r}")
  if config.l2_hints not in L2_HINTS:
    raise ValueError(f"KernelConfig.l2_hints must be one of {tuple(L2_HINTS)}, "
                     f"got {config.l2_hints!r}")
  check_power_of_two_fields(config, ("backward_rows_cols", "backward_rows_warps",
                                    "gather_warps"), allow_none=True)
  for field in ("block_cols", "backward_rows_cols"):
    cols = getattr(config, field)
    if cols is not None and value_dim % cols:
      raise ValueError(f"KernelConfig.{field} must divide Dv = {value_dim}, got {cols}")
    # block_cols is the C x C products' N dimension (Triton's minimum 16); the row
    # kernels' slabs keep the same floor.
    if cols is not None and cols < 16:
      raise ValueError(f"KernelConfig.{field} must be >= 16, got {cols}")
  if not isinstance(config.scan_unroll, int) or config.scan_unroll < 1:
    raise ValueError(f"KernelConfig.scan_unroll must be an int >= 1, got {config.scan_unroll!r}")
  reason = platform.f32_dot_passes_problem("KernelConfig.f32_dot_passes",
                                           config.f32_dot_passes)
  if reason:
    raise ValueError(reason)


def default_config(value_dim: int) -> KernelConfig:
  for block in (64, 32, 16):
    if value_dim % block == 0:
      return KernelConfig(block_cols=block)
  raise ValueError(f"Dv must be a multiple of 16, got {value_dim}")


class _Dims(NamedTuple):
  batch_heads: int
  chunk: int
  writes: int     # W padded to a power of two
  reads: int      # R padded to a power of two
  write_rows: int  # rows of the write layout (unique slots, padded to whole tiles)
  read_rows: int
  num_slots: int
  value_dim: int
  shared: bool

  def token_group(self, config: KernelConfig) -> int:
    return max(1, min(self.chunk, config.group_entries // max(self.writes, self.reads)))


def _blocked_dot(mat_ref, rhs_ref, mat_lead, rhs_lead, cols0, config, chunk, interpret,
                 transpose=False):
  """mat[*mat_lead] [C, C] (or its transpose) @ rhs[*rhs_lead, :, cols] [C, BD] in float32
  (on GPU TF32x3 or one TF32 pass: `KernelConfig.f32_dot_passes`), in K blocks loaded from
  memory (a 256 x 256 float32 matrix would not fit on chip)."""
  precision = platform.f32_dot_precision(interpret, config.f32_dot_passes)
  block_cols = config.block_cols
  contract = ((0,), (0,)) if transpose else ((1,), (0,))
  k_block = min(chunk, 64)
  acc = jnp.zeros((chunk, block_cols), jnp.float32)
  for kb in range(chunk // k_block):
    rhs = rhs_ref[(*rhs_lead, pl.ds(kb * k_block, k_block), pl.ds(cols0, block_cols))]
    if transpose:
      mat = mat_ref[(*mat_lead, pl.ds(kb * k_block, k_block), slice(None))]  # [KB, C]
    else:
      mat = mat_ref[(*mat_lead, slice(None), pl.ds(kb * k_block, k_block))]  # [C, KB]
    acc = acc + lax.dot_general(mat, rhs.astype(jnp.float32), (contract, ((), ())),
                                precision=precision, preferred_element_type=jnp.float32)
  return acc


def gather_rows(ref, lead, rows, cols, valid, eviction_policy=None):
  """ref[*lead, rows, cols] widened to float32, zero where not valid. rows, valid [...]."""
  idx = rows[..., None]
  # New axes by indexing (tt.expand_dims), not by reshape: pip Triton 3.6.0's alignment
  # analysis does not see through tt.reshape and, not knowing the columns contiguous, gave
  # every gather one column per thread with the rows across lanes (uncoalesced scalar
  # loads). On the H200, XLA's own Triton built the reshape form no slower (WORKSPACE.md,
  # issue 11, session 30); this form leaves neither compiler anything to infer.
  col_idx = cols[(None,) * rows.ndim]
  mask = jnp.broadcast_to(valid[..., None], (*rows.shape, cols.shape[0]))
  return pltriton.load(ref.at[(*lead, idx, col_idx)], mask=mask, other=0,
                       eviction_policy=eviction_policy).astype(jnp.float32)


def _scatter(ref, lead, rows, cols, values, valid, eviction_policy=None):
  """ref[*lead, rows, cols] = values where valid. rows, valid [TR]; values [TR, BD]."""
  mask = jnp.broadcast_to(valid[:, None], values.shape)
  pltriton.store(ref.at[(*lead, rows[:, None], cols[None, :])], values.astype(ref.dtype),
                 mask=mask, eviction_policy=eviction_policy)


class _SegmentTerms(NamedTuple):
  """What a segment loop adds per entry (`_segment_sums`): token(entries) loads each entry's
  token [rows]; contribution(entries, token, valid, store_at) returns (scale [rows], rows
  [rows, BD]), the term scale[:, None] * rows for entries[i] in row i's segment, token its
  `token`; num_entries: the chunk's entries (entry ids are below it)."""
  token: Callable[[jax.Array], jax.Array]
  contribution: Callable[..., jax.Array]
  num_entries: int

  @staticmethod
  def of(tokens_ref, here, contribution) -> "_SegmentTerms":
    """Terms whose entries' tokens are tokens_ref[c, bh, entry] [n, B*H, entries]."""
    return _SegmentTerms(lambda entries: tokens_ref[(*here, entries)], contribution,
                         tokens_ref.shape[-1])


def _segment_sums(begin, end, entries: _SegmentTerms, initial, prefetch: bool,
                  interpret: bool):
  """`initial[i]` plus the sum over entries [begin[i], end[i]) of `entries.contribution`,
  for rows i of a tile (begin, end [rows]), in float32: at step k every row adds its
  segment's k-th entry, for as many steps as the tile's longest segment. (Summing onto
  `initial` keeps one [rows, BD] array live across the loop instead of two.) prefetch: load
  step k + 1's tokens before step k's contribution (`KernelConfig.prefetch_entries`). Each
  term is added by one fused multiply-add per element (`platform.fused_multiply_add`).

  The entries passed are clamped in bounds (for unmasked loads); `store_at` puts invalid
  lanes out of bounds, so masked per-entry stores never alias a valid lane (in interpret
  mode a masked store writes back the old value, and out-of-bounds writes drop). Returns
  [rows, BD].
  """
  def step(k):  # (entries clamped in bounds, valid, store_at)
    at = begin + k
    valid = at < end
    return (jnp.where(valid, at, entries.num_entries - 1), valid,
            jnp.where(valid, at, entries.num_entries))

  def add(acc, term):
    scale, rows = term
    return platform.fused_multiply_add(scale[:, None], rows, acc, interpret)

  steps = jnp.max(end - begin)
  if not prefetch:
    def depth(k, acc):
      safe, valid, store_at = step(k)
      return add(acc, entries.contribution(safe, entries.token(safe), valid, store_at))

    return lax.fori_loop(0, steps, depth, initial)

  def depth_prefetched(k, carry):
    acc, token = carry
    safe, valid, store_at = step(k)
    upcoming = entries.token(step(k + 1)[0])
    return add(acc, entries.contribution(safe, token, valid, store_at)), upcoming

  return lax.fori_loop(0, steps, depth_prefetched, (initial, entries.token(step(0)[0])))[0]


def _slab_columns(slab, block):
  """(cols0, cols [block]) of column slab `slab`."""
  cols0 = pl.multiple_of(slab * block, block)
  return cols0, cols0 + jnp.arange(block, dtype=jnp.int32)


class _RowTile(NamedTuple):
  """What a program of a row-tile kernel (grid (B*H, row tiles, slabs)) works on."""
  c: jax.Array         # chunk
  bh: jax.Array        # sequence x head
  cols: jax.Array      # [BD] the slab's columns
  at: pl.Slice         # its positions in the layout's tile order (`layout.RowTiles`)
  rows: jax.Array      # [row_tile] its rows of the chunk's layout (`KernelConfig.row_order`)
  row_slot: jax.Array  # [row_tile] slot of each row
  valid: jax.Array     # [row_tile] rows that hold a slot
  begin: jax.Array     # [row_tile] each row's segment is the entries [begin, end)
  end: jax.Array
  holds_slots: jax.Array  # any(valid): a tile past the chunk's slots has nothing to do


class _Grid(NamedTuple):
  """Where a program works: chunk, sequence x head, its row tile or token group, column
  slab. A per-chunk kernel reads them once at its top level (`of_program`): interpret mode
  replaces `pl.program_id` there, not inside the branches of `pl.when`."""
  c: jax.Array
  bh: jax.Array
  tile: jax.Array  # the row tile (row-tile kernels) or token group (gather kernels)
  slab: jax.Array

  @staticmethod
  def of_program(r) -> "_Grid":
    """The grid (B*H, row tiles or token groups, slabs) of chunk r["chunk"][0]."""
    return _Grid(r["chunk"][0], pl.program_id(0), pl.program_id(1), pl.program_id(2))

  @staticmethod
  def of_row_program(r, config: KernelConfig) -> "_Grid":
    """A row-tile kernel's grid (`_row_grid`) of chunk r["chunk"][0]."""
    if not config.deepest_first:
      return _Grid.of_program(r)
    return _Grid(r["chunk"][0], pl.program_id(0), pl.program_id(2), pl.program_id(1))


def _row_grid(batch_heads: int, tiles: int, slabs: int, config: KernelConfig):
  """The launch grid of a row-tile kernel (`KernelConfig.deepest_first`)."""
  if config.deepest_first:
    return (batch_heads, slabs, tiles)
  return (batch_heads, tiles, slabs)


def _union_tile(tile, write_tiles: int, read_tiles: int, config: KernelConfig):
  """(is a write tile, its index if one, its index if a read tile) for the union's tile
  `tile`: the write tiles, then the read tiles; or (deepest_first) the two alternating,
  the deepest of each first, while both last."""
  if not config.deepest_first:
    return tile < write_tiles, tile, tile - write_tiles
  both = min(write_tiles, read_tiles)
  alternating = tile < 2 * both
  index = jnp.where(alternating, tile // 2, tile - both)
  return jnp.where(alternating, tile % 2 == 0, write_tiles > read_tiles), index, index


def _row_tile(r, kind: str, dims: _Dims, config: KernelConfig, grid: _Grid) -> _RowTile:
  """The row tile `grid.tile` of slab `grid.slab` of chunk `grid.c` in the write or read
  layout (kind "write" or "read"): its rows' fields, each one contiguous load."""
  c, bh = grid.c, grid.bh
  _, cols = _slab_columns(grid.slab, config.block_cols)
  first = pl.multiple_of(grid.tile * config.row_tile, config.row_tile)
  at = pl.ds(first, config.row_tile)
  if config.row_order == "depth":
    rows = r[f"{kind}_tile_rows"][c, bh, at]
  else:
    rows = first + jnp.arange(config.row_tile, dtype=jnp.int32)
  row_slot = r[f"{kind}_tile_slot"][c, bh, at]
  return _RowTile(c, bh, cols, at, rows, row_slot, row_slot < dims.num_slots,
                  r[f"{kind}_tile_begin"][c, bh, at], r[f"{kind}_tile_end"][c, bh, at],
                  jnp.min(row_slot) < dims.num_slots)  # (Triton lowers no reduce_or)


# Kernel refs: plan arrays and results kept for the backward are stacked over chunks
# [n, B*H, ...] and indexed [c, bh]; the chunk's temporaries are [B*H, ...]; tables
# [B*H, N, Dv]. `r["chunk"]` holds c.

# ---------------------------------------------------------------------------------- forward


def _fwd_gather_kernel(*refs, names, dims: _Dims, config: KernelConfig, interpret: bool):
  """grid (B*H, token groups, slabs): per token of the group, the weighted sums of the rows
  it reads (before the chunk's writes) and, shared form, of the rows it writes (r0)."""
  del interpret
  r = dict(zip(names, refs))
  grid = _Grid.of_program(r)
  group, block = dims.token_group(config), config.block_cols
  c, bh = grid.c, grid.bh
  cols0, cols = _slab_columns(grid.slab, block)
  t0 = pl.multiple_of(grid.tile * group, group)
  # The read rows are not touched again in the chunk; the scatter reloads the written ones.
  targets = [("read_slot", "read_coef", "out_read", "once")]
  if dims.shared:
    targets.append(("write_slot", "write_coef", "r0", "again"))
  for slot_name, coef_name, out_name, role in targets:
    slots = r[slot_name][c, bh, pl.ds(t0, group), :]
    coef = r[coef_name][c, bh, pl.ds(t0, group), :]
    rows = gather_rows(r["table"], (bh,), slots, cols, slots < dims.num_slots,
                       _eviction(config, role))
    r[out_name][bh, pl.ds(t0, group), pl.ds(cols0, block)] = jnp.sum(
        coef[:, :, None] * rows, axis=1)


def _fwd_dense_kernel(*refs, names, dims: _Dims, config: KernelConfig, interpret: bool):
  """grid (B*H, 1, slabs): the chunk's tokens in the slab: y = V - r0, delta = S y (shared
  form), out = reads + QK delta."""
  r = dict(zip(names, refs))
  grid = _Grid.of_program(r)
  chunk, block = dims.chunk, config.block_cols
  c, bh = grid.c, grid.bh
  cols0, _ = _slab_columns(grid.slab, block)
  here, cols = (c, bh), pl.ds(cols0, block)
  if dims.shared:
    r["y_out"][(*here, slice(None), cols)] = (r["values"][(*here, slice(None), cols)]
                                              - r["r0"][bh, :, cols])
    platform.triton_barrier(interpret)
    r["delta_out"][(*here, slice(None), cols)] = _blocked_dot(
        r["solve"], r["y_out"], here, here, cols0, config, chunk, interpret)
    platform.triton_barrier(interpret)
  delta = r["delta_out"] if dims.shared else r["values"]
  out = r["out_read"][bh, :, cols] + _blocked_dot(r["qk"], delta, here, here, cols0, config,
                                                  chunk, interpret)
  r["out_out"][(*here, slice(None), cols)] = out.astype(r["out_out"].dtype)


def _fwd_scatter_kernel(*refs, names, dims: _Dims, config: KernelConfig, interpret: bool):
  """grid (B*H, row tiles, slabs) (`_row_grid`): M[s] = E[s] M[s] + sum_{u writes s}
  uc[u,s] delta[u] for the tile's slots, in place, after saving their old rows in the
  snapshot."""
  r = dict(zip(names, refs))
  grid = _Grid.of_row_program(r, config)
  tile = _row_tile(r, "write", dims, config, grid)

  # A tile past the chunk's written slots (a chunk writes U of its C * W padded rows) has
  # nothing to do, and its snapshot rows are never read (`_written_rows` skips it too).
  @pl.when(tile.holds_slots)
  def _():
    _scatter_tile(r, tile, dims, config, interpret)


def _scatter_tile(r, tile: _RowTile, dims: _Dims, config: KernelConfig, interpret: bool):
  """The forward scatter's work for a row tile that holds a written slot."""
  c, bh, cols, row_slot, valid = tile.c, tile.bh, tile.cols, tile.row_slot, tile.valid
  here = (c, bh)
  table = r["table_out"]
  written = gather_rows(table, (bh,), row_slot, cols, valid)
  pltriton.store(r["snapshot_out"].at[c, bh, tile.rows[:, None], cols[None, :]],
                 written.astype(table.dtype), eviction_policy=_eviction(config, "once"))
  delta_ref = r["delta"] if dims.shared else r["values"]

  def update(entries, token, entry_valid, store_at):
    del store_at
    delta = gather_rows(delta_ref, here, token, cols, entry_valid)
    return r["entry_update_coef"][c, bh, entries], delta

  decay = r["write_tile_decay"][c, bh, tile.at]
  new_rows = _segment_sums(tile.begin, tile.end, _SegmentTerms.of(r["entry_token"], here, update),
                           decay[:, None] * written, config.prefetch_entries, interpret)
  _scatter(table, (bh,), row_slot, cols, new_rows, valid, _eviction(config, "last"))


# --------------------------------------------------------------------------------- backward


def _bwd_gather_kernel(*refs, names, dims: _Dims, config: KernelConfig, interpret: bool):
  """grid (B*H, token groups, slabs): per token of the group, kd = sum_i uc d_end[I_t[i]]
  and the update coefficients' gradient d_end[I_t[i]] . delta[t] (this slab's part)."""
  del interpret
  r = dict(zip(names, refs))
  grid = _Grid.of_program(r)
  group, block = dims.token_group(config), config.block_cols
  c, bh = grid.c, grid.bh
  cols0, cols = _slab_columns(grid.slab, block)
  t0 = pl.multiple_of(grid.tile * group, group)
  slots = r["write_slot"][c, bh, pl.ds(t0, group), :]
  coef = r["update_coef"][c, bh, pl.ds(t0, group), :]
  d_new = gather_rows(r["d_table"], (bh,), slots, cols, slots < dims.num_slots,  # [G, W, BD]
                      _eviction(config, "again"))  # the written-rows kernel reloads them
  delta_ref = r["delta"] if dims.shared else r["values"]
  delta = delta_ref[c, bh, pl.ds(t0, group), pl.ds(cols0, block)]
  r["kd"][bh, pl.ds(t0, group), pl.ds(cols0, block)] = jnp.sum(coef[:, :, None] * d_new, axis=1)
  r["d_update_coef_out"][c, bh, grid.slab, pl.ds(t0, group), :] = jnp.sum(
      d_new * delta[:, None, :], axis=2)


def _bwd_dense_kernel(*refs, names, dims: _Dims, config: KernelConfig, interpret: bool):
  """grid (B*H, 1, slabs): the chunk's tokens in the slab: d_delta = QK^T d_out + kd;
  shared form: d_y = S^T d_delta."""
  r = dict(zip(names, refs))
  grid = _Grid.of_program(r)
  chunk, block = dims.chunk, config.block_cols
  c, bh = grid.c, grid.bh
  cols0, _ = _slab_columns(grid.slab, block)
  here, cols = (c, bh), pl.ds(cols0, block)
  r["d_delta_out"][(*here, slice(None), cols)] = r["kd"][bh, :, cols] + _blocked_dot(
      r["qk"], r["d_out"], here, here, cols0, config, chunk, interpret, transpose=True)
  if dims.shared:
    platform.triton_barrier(interpret)
    r["d_values_out"][(*here, slice(None), cols)] = _blocked_dot(
        r["solve"], r["d_delta_out"], here, here, cols0, config, chunk, interpret,
        transpose=True)


def _bwd_written_kernel(*refs, names, dims: _Dims, config: KernelConfig,
                        interpret: bool):
  """grid (B*H, row tiles, slabs): maps the cotangent of the tile's written rows to the
  chunk's start: d_start[s] = E[s] d_end[s] (+ sum_{u writes s} wc[u,s] d_r0[u], shared
  form), and records in `next_write` that this chunk's snapshot holds their rows as this
  and every earlier chunk back to their previous writer found them."""
  r = dict(zip(names, refs))
  _written_rows(r, dims, config, _Grid.of_row_program(r, config), with_reads=False,
                interpret=interpret)


def _bwd_read_kernel(*refs, names, dims: _Dims, config: KernelConfig,
                     interpret: bool):
  """grid (B*H, read row tiles, slabs): d_table[s] += sum_{t reads s} rc[t,s] d_out[t] and
  the read coefficients' gradient M[s] . d_out[t], with M[s] as the chunk found it: the
  snapshot of the next chunk (this one or a later one) that wrote s, or the final table if
  none did (`next_write`)."""
  r = dict(zip(names, refs))
  _read_rows(r, dims, config, _Grid.of_row_program(r, config), interpret)


def _bwd_union_kernel(*refs, names, dims: _Dims, config: KernelConfig, interpret: bool):
  """grid (B*H, write row tiles + read row tiles, slabs): the two kernels above in one
  launch over the union of the chunk's written and read slots (`KernelConfig.backward_rows`
  "union"). A write tile also sums the read cotangents of its rows that the chunk reads (as
  the chunk found them, they are the snapshot rows it has just loaded); a read tile takes
  the read rows the chunk does not write (their read tiles hold no slot there:
  `_union_rows`). So a slot both written and read is loaded and stored once, and the
  chunk's backward is one launch fewer."""
  r = dict(zip(names, refs))
  grid = _Grid.of_row_program(r, config)
  is_write, write_tile, read_tile = _union_tile(
      grid.tile, dims.write_rows // config.row_tile, dims.read_rows // config.row_tile, config)

  @pl.when(is_write)
  def _():
    _written_rows(r, dims, config, grid._replace(tile=write_tile), with_reads=True,
                  interpret=interpret)

  @pl.when(jnp.logical_not(is_write))
  def _():
    _read_rows(r, dims, config, grid._replace(tile=read_tile), interpret)


def _read_cotangent(r, here, slab, cols, table_rows) -> _SegmentTerms:
  """The read entries' `_segment_sums` terms for rows whose table rows (as the chunk found
  them) are `table_rows` [rows, BD]: rc d_out[t], storing the read coefficients' gradient
  table_row . d_out[t] (this slab's part) per entry."""
  c, bh = here

  def contribution(entries, token, entry_valid, store_at):
    d_out = gather_rows(r["d_out"], here, token, cols, entry_valid)
    pltriton.store(r["d_entry_read_coef_out"].at[c, bh, slab, store_at],
                   jnp.sum(table_rows * d_out, axis=1), mask=entry_valid)
    return r["read_entry_coef"][c, bh, entries], d_out

  return _SegmentTerms.of(r["read_entry_token"], here, contribution)


def _written_rows(r, dims: _Dims, config: KernelConfig, grid: _Grid, *, with_reads: bool,
                  interpret: bool):
  """The written-rows kernel's work for write row tile `grid.tile` (see
  `_bwd_written_kernel`); with_reads: also the read cotangents of the rows the chunk reads
  (their read segments: `_union_rows`)."""
  tile = _row_tile(r, "write", dims, config, grid)

  @pl.when(tile.holds_slots)
  def _():
    _written_tile(r, tile, dims, config, grid.slab, with_reads=with_reads,
                  interpret=interpret)

  @pl.when(jnp.logical_not(tile.holds_slots))
  def _():  # no slot, no entries: only the end decays' (zero) gradient to write
    pltriton.store(r["d_row_decay_out"].at[tile.c, tile.bh, grid.slab, tile.rows],
                   jnp.zeros(tile.rows.shape, jnp.float32))


def _written_tile(r, tile: _RowTile, dims: _Dims, config: KernelConfig, slab, *,
                  with_reads: bool, interpret: bool):
  """`_written_rows`' work for a row tile that holds a written slot."""
  c, bh, cols, rows, row_slot, valid = (tile.c, tile.bh, tile.cols, tile.rows, tile.row_slot,
                                        tile.valid)
  here = (c, bh)
  written = pltriton.load(r["snapshot"].at[c, bh, rows[:, None], cols[None, :]],
                          eviction_policy=_eviction(config, "once"))
  snapshot_row = (c * dims.batch_heads + bh) * dims.write_rows + rows  # of the stacked ones
  pltriton.store(r["next_write_out"].at[bh, row_slot], snapshot_row,
                 mask=valid & (slab == 0))  # one slab records it
  written = written.astype(jnp.float32)
  d_table = r["d_table_out"]
  d_end = gather_rows(d_table, (bh,), row_slot, cols, valid)
  pltriton.store(r["d_row_decay_out"].at[c, bh, slab, rows], jnp.sum(d_end * written, axis=1))
  d_start = r["write_tile_decay"][c, bh, tile.at][:, None] * d_end
  if dims.shared:
    def start_estimate(entries, token, entry_valid, store_at):
      # d_r0 = -d_values. The sign goes on the per-row scalars, not on the [rows, BD]
      # rows (one instruction per element in XLA's build, session 47); negation is exact,
      # so the results are bitwise those of negating the rows.
      d_values = gather_rows(r["d_values"], here, token, cols, entry_valid)
      # The entry's row as the chunk found it: its row's snapshot.
      pltriton.store(r["d_entry_write_coef_out"].at[c, bh, slab, store_at],
                     -jnp.sum(written * d_values, axis=1), mask=entry_valid)
      return -r["entry_write_coef"][c, bh, entries], d_values

    d_start = _segment_sums(tile.begin, tile.end,
                            _SegmentTerms.of(r["entry_token"], here, start_estimate), d_start,
                            config.prefetch_entries, interpret)
  if with_reads:  # an empty segment where the chunk does not read s
    begin = r["write_tile_read_begin"][c, bh, tile.at]
    end = r["write_tile_read_end"][c, bh, tile.at]
    d_start = _segment_sums(begin, end, _read_cotangent(r, here, slab, cols, written),
                            d_start, config.prefetch_entries, interpret)
  _scatter(d_table, (bh,), row_slot, cols, d_start, valid, _eviction(config, "last"))


def _read_rows(r, dims: _Dims, config: KernelConfig, grid: _Grid, interpret: bool):
  """The read-rows kernel's work for read row tile `grid.tile` (see `_bwd_read_kernel`)."""
  tile = _row_tile(r, "read", dims, config, grid)

  @pl.when(tile.holds_slots)  # else nothing to add (past the chunk's read slots)
  def _():
    _read_tile(r, tile, config, grid.slab, interpret)


def _read_tile(r, tile: _RowTile, config: KernelConfig, slab, interpret: bool):
  """`_read_rows`' work for a row tile that holds a read slot."""
  c, bh, cols, row_slot, valid = tile.c, tile.bh, tile.cols, tile.row_slot, tile.valid
  here = (c, bh)

  # Each entry's table row is its row's: loaded once for the tile.
  once = _eviction(config, "once")
  kept_at = pltriton.load(r["next_write"].at[bh, row_slot], mask=valid, other=-1)
  kept = valid & (kept_at >= 0)  # else no later chunk wrote s: the final table holds it
  tile_rows = (gather_rows(r["snapshot_rows"], (), jnp.where(kept, kept_at, 0), cols, kept,
                           once)
               + gather_rows(r["final_table"], (bh,), row_slot, cols, valid & ~kept, once))
  d_table = r["d_table_out"]
  current = gather_rows(d_table, (bh,), row_slot, cols, valid)
  end = jnp.where(valid, tile.end, tile.begin)  # a union's skipped rows: a write tile's
  _scatter(d_table, (bh,), row_slot, cols,
           _segment_sums(tile.begin, end, _read_cotangent(r, here, slab, cols, tile_rows),
                         current, config.prefetch_entries, interpret), valid)


# ------------------------------------------------------------------------------ host side


def _call(kernel, grid, chunk_index, inputs: dict, outputs: dict, aliases=(), *, dims,
          config, interpret):
  """pallas_call of chunk `chunk_index` with named inputs and outputs; `aliases` names
  inputs updated in place (their outputs are named `<name>_out` in the kernel)."""
  inputs = dict(chunk=jnp.reshape(chunk_index, (1,)).astype(jnp.int32), **inputs)
  in_names, out_names = list(inputs), list(outputs)
  names = in_names + [n + "_out" if n in aliases else n for n in out_names]
  body = functools.partial(kernel, names=names, dims=dims, config=config,
                           interpret=interpret)
  results = pl.pallas_call(
      body,
      name=kernel.__name__.strip("_"),  # names the kernel in profiles
      out_shape=[jax.ShapeDtypeStruct(outputs[n].shape, outputs[n].dtype) for n in out_names],
      grid=grid,
      input_output_aliases={in_names.index(n): out_names.index(n) for n in aliases},
      interpret=interpret,
      compiler_params=pltriton.CompilerParams(num_warps=config.num_warps,
                                             num_stages=config.num_stages),
  )(*inputs.values())
  return dict(zip(out_names, results))


def _uninitialized(shape, dtype) -> jax.Array:
  """A buffer the kernels write before anything reads it, left unwritten until then
  (`lax.empty`): zeroing the snapshots alone cost 1.3-2.5 ms per call on the H200. The
  tests fill these with NaN instead, so a kernel that leaves an element unwritten shows."""
  return lax.empty(shape, dtype)


def _chunk_major(x):
  """[B, H, n, ...] -> [n, B * H, ...]."""
  x = x.reshape(-1, *x.shape[2:])
  return jnp.moveaxis(x, 1, 0)


def _batch_major(x, batch, heads):
  """[n, B * H, ...] -> [B, H, n, ...]."""
  return jnp.moveaxis(x, 0, 1).reshape(batch, heads, *x.shape[:1], *x.shape[2:])


def _dims(memory_shape, ids: ChunkIds, shared: bool, config: KernelConfig) -> _Dims:
  batch, heads, _, chunk, num_writes = ids.write_pos.shape
  writes = next_power_of_two(num_writes)
  reads = next_power_of_two(ids.read_idx.shape[-1])
  return _Dims(
      batch_heads=batch * heads, chunk=chunk, writes=writes, reads=reads,
      write_rows=layout.num_rows(ids.slots.shape[-1], config.row_tile),
      read_rows=layout.num_rows(chunk * reads, config.row_tile),
      num_slots=memory_shape[-2], value_dim=memory_shape[-1], shared=shared)


def _sorted(coef, entries: layout.EntryLayout, width):
  """Token-major coefficients [n, BH, C, W] -> slot-sorted entries [n, BH, E]."""
  padded = layout.pad_entries(coef, width, 0)
  return layout.permuted(padded.reshape(*padded.shape[:2], -1), entries.order)


def _unsorted(sorted_values, entries: layout.EntryLayout, chunk, width, count):
  """Slot-sorted entries [n, BH, E] -> token-major [n, BH, C, count] (the inverse)."""
  # The order is a permutation (padding entries included).
  token_major = layout.unpermuted(sorted_values, entries.order)
  return token_major.reshape(*sorted_values.shape[:2], chunk, width)[..., :count]


def _write_layout(ids: ChunkIds, dims: _Dims, config: KernelConfig):
  """The plan's integer part in the kernels' layout, stacked over chunks [n, B * H, ...]:
  token-major slot ids, slot-sorted write entries (phase 1's sort) and the write row tiles.
  The forward builds it and the backward reuses it."""
  slots = ids.slots.astype(jnp.int32)
  flat_pos = ids.write_pos.reshape(*ids.write_pos.shape[:-2], -1).astype(jnp.int32)
  write_slot = layout.gather_last(slots, flat_pos).reshape(ids.write_pos.shape)
  writes = jax.tree.map(_chunk_major, layout.write_layout(
      ids.write_pos, slots, ids.write_permutation, num_slots=dims.num_slots, width=dims.writes,
      row_tile=config.row_tile))
  int_xs = dict(
      read_slot=_chunk_major(layout.pad_entries(ids.read_idx.astype(jnp.int32), dims.reads,
                                                dims.num_slots)),
      write_slot=_chunk_major(layout.pad_entries(write_slot, dims.writes, dims.num_slots)),
      entry_token=writes.token,
      **_tile_inputs("write", layout.row_tiles(writes, config.row_order)),
  )
  return int_xs, writes


def _tile_inputs(kind: str, tiles: layout.RowTiles) -> dict:
  """The kernels' names for the row tiles of the write or read layout."""
  xs = {f"{kind}_tile_{field}": getattr(tiles, field) for field in ("slot", "begin", "end")}
  if tiles.rows is not None:
    xs[f"{kind}_tile_rows"] = tiles.rows
  return xs


def _write_inputs(coefs: ChunkCoefs, int_xs: dict, writes: layout.EntryLayout, dims: _Dims):
  """`_write_layout`'s arrays and the coefficients in the kernels' layout (float32)."""
  f32 = lambda x: _chunk_major(x).astype(jnp.float32)  # noqa: E731
  xs = dict(
      int_xs,
      read_coef=layout.pad_entries(f32(coefs.read_coef), dims.reads, 0),
      qk=f32(coefs.qk),
      values=f32(coefs.values),
      update_coef=layout.pad_entries(f32(coefs.update_coef), dims.writes, 0),
      entry_update_coef=_sorted(f32(coefs.update_coef), writes, dims.writes),
      write_tile_decay=layout.in_tile_order(
          layout.pad_entries(f32(coefs.end_decay), dims.write_rows, 0),
          int_xs.get("write_tile_rows")),
  )
  if dims.shared:
    xs.update(write_coef=layout.pad_entries(f32(coefs.write_coef), dims.writes, 0),
              solve=f32(coefs.solve),
              entry_write_coef=_sorted(f32(coefs.write_coef), writes, dims.writes))
  return xs


def _read_inputs(coefs: ChunkCoefs, ids: ChunkIds, dims: _Dims, config: KernelConfig,
                 write_tile_rows: jax.Array | None):
  """Slot-sorted read entries and read row tiles (the backward's scatter of d_out);
  write_tile_rows: the write layout's `layout.RowTiles.rows`."""
  reads = jax.tree.map(_chunk_major, layout.read_layout(
      ids.read_idx, ids.read_permutation, num_slots=dims.num_slots, width=dims.reads,
      row_tile=config.row_tile))
  xs = dict(read_entry_token=reads.token,
            read_entry_coef=_sorted(_chunk_major(coefs.read_coef).astype(jnp.float32), reads,
                                    dims.reads))
  read_tile_layout = reads
  if config.backward_rows == "union":
    union = _union_rows(_chunk_major(ids.read_pos), reads, dims, ids.slots.shape[-1])
    # The read tiles take only the slots the chunk does not write.
    read_tile_layout = reads._replace(row_slot=jnp.where(
        union.read_write_row >= 0, dims.num_slots, reads.row_slot))
    # A write tile sums the read segment of each of its rows that the chunk reads.
    read_row = jnp.maximum(union.write_read_row, 0)
    is_read = union.write_read_row >= 0
    segment = lambda bound: layout.in_tile_order(jnp.where(  # noqa: E731
        is_read, layout.gather_last(bound, read_row), 0), write_tile_rows)
    xs.update(write_tile_read_begin=segment(reads.row_begin[..., :-1]),
              write_tile_read_end=segment(reads.row_begin[..., 1:]))
  xs.update(_tile_inputs("read", layout.row_tiles(read_tile_layout, config.row_order)))
  return xs, reads


class _UnionRows(NamedTuple):
  read_write_row: jax.Array  # [n, BH, read rows] the slot's write row, -1 if not written
  write_read_row: jax.Array  # [n, BH, write rows] the slot's read row, -1 if not read


def _union_rows(read_pos, reads: layout.EntryLayout, dims: _Dims, unwritten: int
                ) -> _UnionRows:
  """How `_bwd_union_kernel` splits the slots both written and read between its tiles.
  read_pos [n, BH, C, R]: each read's write row, `unwritten` (U) if none."""
  padded = layout.pad_entries(read_pos.astype(jnp.int32), dims.reads, unwritten)

  def one(pos, order, row_begin, row_slot):
    first = jnp.minimum(row_begin[:-1], order.shape[0] - 1)  # each read row's first entry
    write_row = pos.reshape(-1)[order[first]]
    write_row = jnp.where((row_slot < dims.num_slots) & (write_row < unwritten), write_row, -1)
    read_row = jnp.arange(write_row.shape[0], dtype=jnp.int32)
    write_read_row = jnp.full((dims.write_rows,), -1, jnp.int32).at[
        jnp.where(write_row >= 0, write_row, dims.write_rows)].set(read_row, mode="drop")
    return write_row, write_read_row

  lead = padded.shape[:2]
  flat = lambda x: x.reshape(-1, *x.shape[2:])  # noqa: E731
  read_write_row, write_read_row = jax.vmap(one)(
      flat(padded), flat(reads.order.order), flat(reads.row_begin), flat(reads.row_slot))
  return _UnionRows(read_write_row.reshape(*lead, -1), write_read_row.reshape(*lead, -1))


def _pick(xs, *names):
  return {n: xs[n] for n in names}


def _tiles(xs, *kinds):
  """The row tiles' arrays (`_tile_inputs`, `write_tile_decay`, the union's read segments)
  of layouts `kinds` ("write", "read")."""
  return {name: x for name, x in xs.items()
          if any(name.startswith(f"{kind}_tile_") for kind in kinds)}


def _forward_chunk(carry, c, *, xs, dims: _Dims, config: KernelConfig, interpret: bool):
  """Chunk c: carry (table [BH, N, Dv], results stacked over chunks) -> the same, updated."""
  table, saved = carry
  kw = dict(dims=dims, config=config, interpret=interpret)
  gather_kw = dict(kw, config=config.gather_config())
  bh, slabs = dims.batch_heads, dims.value_dim // config.block_cols
  tokens = jax.ShapeDtypeStruct((bh, dims.chunk, dims.value_dim), jnp.float32)
  gather_in = dict(table=table, **_pick(xs, "read_slot", "read_coef"))
  gather_out = dict(out_read=tokens)
  if dims.shared:
    gather_in.update(_pick(xs, "write_slot", "write_coef"))
    gather_out.update(r0=tokens)
  group = dims.token_group(config)
  gathered = _call(_fwd_gather_kernel, (bh, dims.chunk // group, slabs), c, gather_in,
                   gather_out, **gather_kw)

  stacked = ("out", "y", "delta") if dims.shared else ("out",)
  dense_in = dict(out_read=gathered["out_read"], **_pick(xs, "qk", "values"),
                  **_pick(saved, *stacked))
  if dims.shared:
    dense_in.update(r0=gathered["r0"], solve=xs["solve"])
  dense = _call(_fwd_dense_kernel, (bh, 1, slabs), c, dense_in, _pick(saved, *stacked),
                aliases=stacked, **kw)
  saved = dict(saved, **dense)

  scatter_in = dict(table=table, snapshot=saved["snapshot"], **_pick(
      xs, "values", "entry_token", "entry_update_coef"), **_tiles(xs, "write"))
  if dims.shared:
    scatter_in.update(delta=saved["delta"])
  scattered = _call(_fwd_scatter_kernel,
                    _row_grid(bh, dims.write_rows // config.row_tile, slabs, config), c,
                    scatter_in, dict(table=table, snapshot=saved["snapshot"]),
                    aliases=("table", "snapshot"), **kw)
  return (scattered["table"], dict(saved, snapshot=scattered["snapshot"])), None


def _backward_chunk(carry, c, *, xs, dims: _Dims, config: KernelConfig, interpret: bool):
  """Chunk c in reverse: (next_write and d_table at its end, gradients stacked over chunks)
  -> (both at its start, gradients updated). next_write [B*H, N] is the row of the stacked
  snapshots that holds each slot's row as the chunk found it, -1 where the final table
  holds it (no later chunk wrote the slot)."""
  next_write, d_table, grads = carry
  kw = dict(dims=dims, config=config, interpret=interpret)
  gather_kw = dict(kw, config=config.gather_config())
  bh, slabs = dims.batch_heads, dims.value_dim // config.block_cols
  tokens = jax.ShapeDtypeStruct((bh, dims.chunk, dims.value_dim), jnp.float32)
  group = dims.token_group(config)
  gather_in = dict(d_table=d_table, d_update_coef=grads["d_update_coef"],
                   **_pick(xs, "values", "write_slot", "update_coef"))
  if dims.shared:
    gather_in.update(delta=xs["delta"])
  gathered = _call(_bwd_gather_kernel, (bh, dims.chunk // group, slabs), c, gather_in,
                   dict(kd=tokens, d_update_coef=grads["d_update_coef"]),
                   aliases=("d_update_coef",), **gather_kw)
  grads = dict(grads, d_update_coef=gathered["d_update_coef"])

  stacked = ("d_delta", "d_values") if dims.shared else ("d_delta",)
  dense_in = dict(kd=gathered["kd"], **_pick(xs, "d_out", "qk"), **_pick(grads, *stacked))
  if dims.shared:
    dense_in.update(solve=xs["solve"])
  grads = dict(grads, **_call(_bwd_dense_kernel, (bh, 1, slabs), c, dense_in,
                              _pick(grads, *stacked), aliases=stacked, **kw))

  written_stacked = ("d_row_decay", "d_entry_write_coef") if dims.shared else ("d_row_decay",)
  written_in = dict(next_write=next_write, d_table=d_table, **_pick(grads, *written_stacked),
                    **_pick(xs, "snapshot"), **_tiles(xs, "write"))
  if dims.shared:
    written_in.update(d_values=grads["d_values"], **_pick(
        xs, "entry_token", "entry_write_coef"))
  written_out = dict(next_write=next_write, d_table=d_table,
                     **_pick(grads, *written_stacked))
  read_names = ("final_table", "snapshot_rows", "d_out", "read_entry_token", "read_entry_coef")
  write_tiles = dims.write_rows // config.row_tile
  read_tiles = dims.read_rows // config.row_tile
  row_config = config.backward_rows_config()
  row_kw = dict(kw, config=row_config)
  row_slabs = dims.value_dim // row_config.block_cols
  if config.backward_rows == "union":
    union_in = dict(written_in, d_entry_read_coef=grads["d_entry_read_coef"],
                    **_pick(xs, *read_names), **_tiles(xs, "read"))
    union_out = dict(written_out, d_entry_read_coef=grads["d_entry_read_coef"])
    union_grid = _row_grid(bh, write_tiles + read_tiles, row_slabs, row_config)
    union = _call(_bwd_union_kernel, union_grid, c, union_in, union_out,
                  aliases=tuple(union_out), **row_kw)
    grads = dict(grads, **_pick(union, *written_stacked, "d_entry_read_coef"))
    return (union["next_write"], union["d_table"], grads), None

  written = _call(_bwd_written_kernel, _row_grid(bh, write_tiles, row_slabs, row_config), c,
                  written_in, written_out, aliases=tuple(written_out), **row_kw)
  grads = dict(grads, **_pick(written, *written_stacked))
  read_in = dict(next_write=written["next_write"], d_table=written["d_table"],
                 d_entry_read_coef=grads["d_entry_read_coef"], **_pick(xs, *read_names),
                 **_tiles(xs, "read"))
  read_out = dict(d_table=d_table, d_entry_read_coef=grads["d_entry_read_coef"])
  read = _call(_bwd_read_kernel, _row_grid(bh, read_tiles, row_slabs, row_config), c, read_in,
               read_out, aliases=tuple(read_out), **row_kw)
  grads = dict(grads, d_entry_read_coef=read["d_entry_read_coef"])
  return (written["next_write"], read["d_table"], grads), None


@functools.partial(jax.custom_vjp, nondiff_argnums=(3, 4, 5))
def _scan(memory, coefs: ChunkCoefs, ids: ChunkIds, config: KernelConfig, interpret: bool,
          out_dtype):
  return _scan_fwd(memory, coefs, ids, config, interpret, out_dtype)[0]


def _scan_fwd(memory, coefs: ChunkCoefs, ids: ChunkIds, config: KernelConfig,
              interpret: bool, out_dtype):
  batch, heads, num_chunks, chunk, _ = ids.write_pos.shape
  dims = _dims(memory.shape, ids, coefs.solve is not None, config)
  if memory.ndim == 3:  # a shared initial table: a copy per sequence, by one kernel
    table = batch_copies.batch_copies(memory, batch, interpret=interpret)
  else:
    table = memory.reshape(dims.batch_heads, *memory.shape[-2:])
  int_xs, writes = _write_layout(ids, dims, config)
  xs = _write_inputs(coefs, int_xs, writes, dims)
  tokens = lambda dtype=jnp.float32: _uninitialized(  # noqa: E731
      (num_chunks, dims.batch_heads, chunk, dims.value_dim), dtype)
  saved = dict(out=tokens(out_dtype), snapshot=_uninitialized(
      (num_chunks, dims.batch_heads, dims.write_rows, dims.value_dim), table.dtype))
  if dims.shared:
    saved.update(y=tokens(), delta=tokens())
  step = functools.partial(_forward_chunk, xs=xs, dims=dims, config=config,
                           interpret=interpret)
  (final, saved), _ = lax.scan(step, (table, saved), jnp.arange(num_chunks),
                               unroll=config.scan_unroll)
  out = _batch_major(saved.pop("out"), batch, heads)
  final = final.reshape(batch, heads, *memory.shape[-2:])
  # A shared [H, N, Dv] table is remembered by a [H, 0] marker (residuals must be arrays).
  shared_marker = jnp.zeros((heads, 0), memory.dtype) if memory.ndim == 3 else None
  return (out, final), (final, saved, coefs, ids, int_xs, writes, shared_marker)


def _scan_bwd(config: KernelConfig, interpret: bool, out_dtype, residuals, cotangents):
  final, saved, coefs, ids, int_xs, writes, shared_marker = residuals
  d_out, d_final = cotangents
  batch, heads, num_chunks, chunk, value_dim = d_out.shape
  num_slots = final.shape[-2]
  dims = _dims(final.shape, ids, coefs.solve is not None, config)
  bh, slabs = dims.batch_heads, value_dim // config.block_cols
  xs = _write_inputs(coefs, int_xs, writes, dims)
  read_xs, reads = _read_inputs(coefs, ids, dims, config, int_xs.get("write_tile_rows"))
  del out_dtype  # d_out's: the kernels widen it to float32 as they load it
  d_out_chunks = _chunk_major(d_out)
  xs = dict(xs, **read_xs, **saved, d_out=d_out_chunks)
  # The backward never writes the table: each chunk's rows as it found them are read from
  # the snapshots (of the next chunk that wrote them) or the final table, so neither the
  # table nor a copy of it is restored chunk by chunk.
  xs.update(final_table=final.reshape(bh, num_slots, value_dim),
            snapshot_rows=saved["snapshot"].reshape(-1, value_dim))
  d_table = d_final.astype(final.dtype).reshape(bh, num_slots, value_dim)
  next_write = jnp.full((bh, num_slots), -1, jnp.int32)  # no later chunk yet
  # Per chunk, the kernels write every element of these but the per-entry gradients of
  # padding entries (W or R padded to a power of two), which `_unsorted` drops.
  per_chunk = lambda *shape: _uninitialized((num_chunks, bh, *shape), jnp.float32)  # noqa: E731
  row_slabs = value_dim // config.backward_rows_config().block_cols
  grads = dict(d_update_coef=per_chunk(slabs, chunk, dims.writes),
               d_delta=per_chunk(chunk, value_dim),
               d_row_decay=per_chunk(row_slabs, dims.write_rows),
               d_entry_read_coef=per_chunk(row_slabs, chunk * dims.reads))
  if dims.shared:
    grads.update(d_values=per_chunk(chunk, value_dim),
                 d_entry_write_coef=per_chunk(row_slabs, chunk * dims.writes))
  step = functools.partial(_backward_chunk, xs=xs, dims=dims, config=config,
                           interpret=interpret)
  (_, d_table, grads), _ = lax.scan(step, (next_write, d_table, grads),
                                    jnp.arange(num_chunks), reverse=True,
                                    unroll=config.scan_unroll)

  slab_sum = lambda name: jnp.sum(grads[name], axis=2)  # [n, BH, slabs, ...]  # noqa: E731
  # The C x C gradients of QK and of the solve, summed over Dv, at the kernels' precision:
  # at HIGHEST cuBLAS ran them on CUDA cores (sm80 xmma f32 FFMA GEMMs), 0.34 ms of
  # `sdm_small`'s step on an H100 (session 52's profile); TF32x3 keeps them about float32.
  # The step on an H100: 43.93 ms against 44.08 (WORKSPACE.md, issue 11, session 53).
  # XLA runs them on the default backend, whatever `interpret` says of the kernels: TF32x3
  # only where that is a GPU (the CPU's dot_general takes no TF32 algorithm).
  contract = lambda a, b: jnp.einsum(  # noqa: E731
      "nxtd,nxud->nxtu", a, b, precision=platform.f32_dot_precision(
          interpret or not platform.on_gpu(), config.f32_dot_passes))
  num_writes, num_reads = coefs.update_coef.shape[-1], coefs.read_coef.shape[-1]
  delta = saved["delta"] if dims.shared else xs["values"]
  d = dict(
      read_coef=_unsorted(slab_sum("d_entry_read_coef"), reads, chunk, dims.reads, num_reads),
      qk=contract(d_out_chunks, delta),
      update_coef=slab_sum("d_update_coef")[..., :num_writes],
      end_decay=slab_sum("d_row_decay")[..., :coefs.end_decay.shape[-1]],
      values=grads["d_values"] if dims.shared else grads["d_delta"],
  )
  if dims.shared:
    d.update(write_coef=_unsorted(slab_sum("d_entry_write_coef"), writes, chunk, dims.writes,
                                  num_writes),
             solve=contract(grads["d_delta"], saved["y"]))
  d_coefs = ChunkCoefs(**{
      name: None if getattr(coefs, name) is None else
      _batch_major(d[name], batch, heads).astype(getattr(coefs, name).dtype)
      for name in ChunkCoefs._fields})
  d_table = d_table.reshape(batch, heads, num_slots, value_dim)
  if shared_marker is not None:
    d_table = jnp.sum(d_table.astype(jnp.float32), axis=0)
  return d_table.astype(final.dtype), d_coefs, None


_scan.defvjp(_scan_fwd, _scan_bwd)


def scan_chunks(memory: jax.Array, plan: ChunkPlan, *, error: str,
                config: KernelConfig | None = None, interpret: bool | None = None,
                out_dtype=None) -> tuple[jax.Array, jax.Array]:
  """Phase 2 by the Pallas kernels; the contract of `scan_xla.scan_chunks`.

  Args:
    memory: [B, H, N, Dv] (one table per sequence) or [H, N, Dv] (shared initial table;
      its gradient sums over B in float32), float32 or bfloat16 (the storage dtype).
    plan: a float32 plan with leading axes [B, H, n_chunks] (C a power of two in [16, 256]).
    error: "shared" or "per_slot"; must match the plan (the shared form has a solve).
    config: tiling; `default_config(Dv)` when None.
    interpret: run the kernels in interpret mode; default: unless on a GPU.
    out_dtype: out's dtype, one of `OUT_DTYPES` (default float32). The forward kernel stores
      the outputs in it (rounded once, as a conversion after would) and the backward reads
      their cotangent in it.

  Returns:
    out [B, H, n_chunks, C, Dv] in out_dtype and the final memory [B, H, N, Dv] in memory's
    dtype.
  """
  if (error == "shared") != (plan.coefs.solve is not None):
    raise ValueError(f"error={error!r} does not match the plan")
  chunk = plan.ids.write_pos.shape[-2]
  reason = kernel_limits(chunk=chunk, value_dim=memory.shape[-1], table_dtype=memory.dtype,
                         plan_dtype=plan.coefs.values.dtype)
  if reason:
    raise ValueError(f"the Pallas sparse delta kernels cannot run: {reason}")
  if config is None:
    config = default_config(memory.shape[-1])
  check_config(config, memory.shape[-1])
  out_dtype = jnp.dtype(out_dtype or jnp.float32)
  if out_dtype not in OUT_DTYPES:
    raise ValueError(f"out_dtype must be one of {[d.name for d in OUT_DTYPES]}, got "
                     f"{out_dtype.name}")
  if interpret is None:
    interpret = not platform.on_gpu()
  return _scan(memory, plan.coefs, plan.ids, config, interpret, out_dtype)


__all__ = ["BACKWARD_ROWS", "KernelConfig", "MAX_CHUNK", "OUT_DTYPES", "TABLE_DTYPES",
           "check_config", "default_config", "kernel_limits", "scan_chunks"]
