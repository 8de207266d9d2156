"""Integer bookkeeping that lets the phase-2 kernels scatter without atomics.

A chunk's new row for slot s sums the updates of every token that wrote s; the read
cotangents of s likewise sum over every token that read s. The kernels form those sums
over entries sorted by slot, each program owning a tile of rows:

* Entries (one per (token, write) or (token, read)) are sorted by slot, ties by token. The
  run of entries of one slot is a *segment*, and each segment is one *row* of the
  chunk's row layout (segment r is row r).
* Row r's segment is the entries [row_begin[r], row_begin[r + 1]). Rows are cut into
  tiles of `row_tile` rows, each row in one tile, so every slot is loaded and stored by
  exactly one program: in row order (tile t owns rows [t * row_tile, ...) and the
  contiguous entries of their segments) or, `depth_order`, longest segment first (tile t
  owns rows depth_order[t * row_tile:...], each with its own segment's entries).
  `row_tiles` lays each row's slot and segment bounds out in that tile order, so a tile
  loads them as contiguous blocks.
* Rows past the last segment have `row_slot >= num_slots` and are skipped.

For writes, phase 1's positions in the sorted unique slots already are segment ids, so the
rows are `ChunkIds.slots` themselves (row r = position r). Phase 1's sorts
(`ChunkIds.write_order`, `ChunkIds.read_order`) are the entries' orders. W and R are
padded to powers of two with entries that sort after every real one and belong to no tile,
so that every block the kernels load has a power-of-two size.

Every order travels with its inverse (`Permutation`), so that moving values into or out of
slot order is a gather both ways, and so are the transposes (`permuted`, `unpermuted`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax


class Permutation(NamedTuple):
  """A permutation of the last axis of [..., E] arrays, per leading index, with its inverse,
  so that both directions (and both their transposes) are gathers: XLA's scatter of a
  permutation, even one declared unique, fills its output first and, batched, builds
  [..., E, 2] indices. With the plan's sort on one key, gathers in place of those
  scatters took 0.80 ms off `sdm_small`'s step on an H100 (WORKSPACE.md, session 55)."""
  order: jax.Array    # [..., E] position e of the permuted array holds entry order[e]
  inverse: jax.Array  # [..., E] entry i goes to position inverse[i]: order[inverse[i]] = i


def inverse_order(order: jax.Array) -> jax.Array:
  """[..., E] the inverse of `order`, a permutation of the last axis per leading index: one
  scatter of positions (the only one a `Permutation` needs)."""
  lead, width = order.shape[:-1], order.shape[-1]
  position = jnp.broadcast_to(jnp.arange(width, dtype=jnp.int32), order.shape)
  flat = _flat_index(order.astype(jnp.int32), width)
  inverse = jnp.zeros((flat.size,), jnp.int32).at[flat].set(
      position.reshape(-1), unique_indices=True, mode="promise_in_bounds")
  return inverse.reshape(*lead, width)


def permutation(order: jax.Array) -> Permutation:
  """order [..., E] (a permutation of the last axis per leading index) with its inverse."""
  return Permutation(order.astype(jnp.int32), inverse_order(order))


def _flat_index(index: jax.Array, width: int) -> jax.Array:
  """index [..., X] into the last axis of a [..., width] array (the same leading axes) ->
  [index.size] indices into that array flattened: for one 1-D gather or scatter, where a
  batched one has XLA build [..., X, 2] indices."""
  rows = math.prod(index.shape[:-1])
  offsets = jnp.arange(rows, dtype=jnp.int32)[:, None] * width
  return (index.reshape(rows, -1) + offsets).reshape(-1)


def gather_last(values: jax.Array, index: jax.Array, *, unique: bool = False) -> jax.Array:
  """values [..., E] at index [..., X] along the last axis (as `jnp.take_along_axis` with
  the same leading axes; every index in [0, E)), by one flat gather. unique: the indices
  are distinct per leading index, so the transpose may be a plain scatter (no atomic
  adds); a wrong promise gives wrong gradients."""
  if values.shape[:-1] != index.shape[:-1]:
    raise ValueError(f"gather_last needs values and index with the same leading axes, got "
                     f"{values.shape} and {index.shape}")
  if values.size > jnp.iinfo(jnp.int32).max:
    return jnp.take_along_axis(values, index, axis=-1)
  flat = values.reshape(-1).at[_flat_index(index.astype(jnp.int32), values.shape[-1])].get(
      mode="promise_in_bounds", unique_indices=unique)
  return flat.reshape(index.shape)


def _gather_or_zero(values, index):
  # Differentiated only through matched_gather's own rule, so uniqueness is moot here.
  return jnp.where(index >= 0, gather_last(values, jnp.maximum(index, 0)), 0)


@jax.custom_vjp
def matched_gather(values: jax.Array, index: jax.Array, back: jax.Array) -> jax.Array:
  """values [..., E] at index [..., X] along the last axis, 0 where index < 0, for an index
  that takes each entry at most once; back [..., E] is its inverse (back[index[p]] = p, -1
  for the entries no position takes), so that the transpose is a gather at back too."""
  return _gather_or_zero(values, index)


def _matched_gather_fwd(values, index, back):
  return _gather_or_zero(values, index), (index, back)


def _matched_gather_bwd(residuals, cotangent):
  _, back = residuals
  return _gather_or_zero(cotangent, back), None, None


matched_gather.defvjp(_matched_gather_fwd, _matched_gather_bwd)


def permuted(values: jax.Array, perm: Permutation) -> jax.Array:
  """values [..., E] in the permutation's order: out[..., e] = values[..., order[..., e]].
  A gather, and so is its transpose (at the inverse)."""
  return matched_gather(values, perm.order, perm.inverse)


def unpermuted(values: jax.Array, perm: Permutation) -> jax.Array:
  """The inverse of `permuted`: out[..., order[..., e]] = values[..., e], gathered at the
  inverse; its transpose gathers at the order."""
  return matched_gather(values, perm.inverse, perm.order)


class EntryLayout(NamedTuple):
  """Slot-sorted entries of one chunk and its row tiles. Leading axes [..., n_chunks]."""
  order: Permutation      # [..., E] order[e]: the token-major index (token * width + i) of
  #                         sorted entry e, with its inverse
  token: jax.Array        # [..., E] the entry's token
  row: jax.Array          # [..., E] the entry's row (segment); >= rows for padding entries
  row_slot: jax.Array     # [..., rows] slot of each row, >= num_slots past the last segment
  row_begin: jax.Array    # [..., rows + 1] first entry of each row's segment (then E_real)


def pad_entries(x: jax.Array, width: int, fill) -> jax.Array:
  """Pads the last axis of x to `width` with `fill`."""
  pad = width - x.shape[-1]
  if pad == 0:
    return x
  return jnp.concatenate([x, jnp.full((*x.shape[:-1], pad), fill, x.dtype)], axis=-1)


def segment_starts(sorted_values: jax.Array) -> jax.Array:
  """[E] bool: True at each entry of sorted_values [E] that starts a run of equal values."""
  return jnp.concatenate([jnp.ones((1,), bool), sorted_values[1:] != sorted_values[:-1]])


def num_rows(entries: int, row_tile: int) -> int:
  """Rows of the row layout: enough tiles for one segment per entry."""
  return -(-entries // row_tile) * row_tile


def tile_starts(sorted_rows, rows, row_tile):
  """[rows / row_tile + 1] the first entry of each row tile (then the entry count) in
  entries of nondecreasing rows `sorted_rows` [E] in [-1, rows] (-1: before every tile,
  `rows`: after the last); with row_tile 1, of each row.

  Tile t starts at the first entry of row >= t * row_tile. Each run of entries in one
  tile sets its tile's start from its first entry (one write per tile, no two to the same
  place), and a reverse running minimum gives the tiles no entry has the start of the next.
  (Not `jnp.searchsorted`: on a GPU its default method is a while loop of small kernels,
  about 0.4 ms of the SDM layer's step in the H200 profile. Nor a histogram of the tiles'
  entries: with row tiles of 64 every entry of a chunk adds into one of 19 counters at
  `sdm_small`'s shapes, 55 us a launch of contended atomics in the pair weights' backward
  on the H200, session 45.)"""
  tiles = rows // row_tile
  bins = sorted_rows.astype(jnp.int32) // row_tile + 1  # -1 -> bin 0, `rows` -> tiles + 1
  entry = jnp.arange(bins.shape[-1], dtype=jnp.int32)
  # The first entry of each bin writes its start; every other entry a place of its own
  # past the end, dropped: the indices are distinct, so the scatter needs no atomics.
  at = jnp.where(segment_starts(bins), bins, tiles + 2 + entry)
  starts = jnp.full((tiles + 2,), bins.shape[-1], jnp.int32).at[at].set(
      entry, mode="drop", unique_indices=True)
  # starts[b]: the first entry of bin >= b; tile t starts after every entry of bin <= t.
  return lax.cummin(starts, axis=0, reverse=True)[1:]


def depth_order(row_begin: jax.Array, max_length: int) -> jax.Array:
  """[..., rows] the rows of a layout (row_begin [..., rows + 1], no segment longer than
  max_length) by segment length, longest first, ties by row: cut into tiles in this order,
  the deep segments share a few tiles and most tiles' loops are short
  (`scan_pallas.KernelConfig.row_order`).

  One int32 key per row, (max_length - length) * rows + row, distinct, so an unstable sort
  of the keys alone gives the order (a stable argsort sorts the lengths with the rows'
  indices beside them: two operands, 0.083 ms a sort at `sdm_small`'s shapes on the H200
  against 0.043, session 45); the argsort where the key would not fit."""
  rows = row_begin.shape[-1] - 1
  lengths = row_begin[..., 1:] - row_begin[..., :-1]
  if (max_length + 1) * rows > jnp.iinfo(jnp.int32).max:
    return jnp.argsort(-lengths, axis=-1, stable=True).astype(jnp.int32)
  row = jnp.arange(rows, dtype=jnp.int32)
  keys = (max_length - lengths.astype(jnp.int32)) * rows + row
  return lax.sort(keys, dimension=keys.ndim - 1, is_stable=False) % rows


class RowTiles(NamedTuple):
  """A layout's rows in the order its row tiles take them: tile t owns positions
  [t * row_tile, (t + 1) * row_tile). Per position, so a tile loads each field as one
  contiguous block, all at once, rather than through its rows (a dependent load less)."""
  rows: jax.Array | None  # [..., rows] the row at each position; None: position = row
  slot: jax.Array         # [..., rows] its slot, >= num_slots for no row
  begin: jax.Array        # [..., rows] its segment is the entries [begin, end)
  end: jax.Array          # [..., rows]


ROW_ORDERS = ("slot", "depth")


def row_tiles(entries: EntryLayout, row_order: str) -> RowTiles:
  """The rows of `entries` in row order "slot" (as they are) or "depth" (`depth_order`)."""
  if row_order not in ROW_ORDERS:
    raise ValueError(f"row_order must be one of {ROW_ORDERS}, got {row_order!r}")
  num_entries = entries.order.order.shape[-1]
  rows = depth_order(entries.row_begin, num_entries) if row_order == "depth" else None
  return RowTiles(rows=rows, slot=in_tile_order(entries.row_slot, rows),
                  begin=in_tile_order(entries.row_begin[..., :-1], rows),
                  end=in_tile_order(entries.row_begin[..., 1:], rows))


def in_tile_order(per_row: jax.Array, rows: jax.Array | None) -> jax.Array:
  """per_row [..., rows] at the positions of `RowTiles.rows` (None: unchanged; else a
  permutation of the rows, `depth_order`)."""
  return per_row if rows is None else gather_last(per_row, rows, unique=True)


def _layout_by_order(values, order: Permutation, *, width: int, rows: int, rows_of):
  """What the write and read layouts share, chunk by chunk: values [..., C, X] (slot ids or
  positions) and phase 1's stable slot order of their entries [..., C * X] ->
  (the order padded to `width` per token, each entry's row, row_begin, *extra), with
  `rows_of(sorted values) -> (the real entries' rows, *extra)`. Padding entries come after
  the real ones, in token-major order, and belong to no row (row `rows`)."""
  chunk, count = values.shape[-2:]
  tokens = jnp.arange(chunk, dtype=jnp.int32)[:, None]
  padding = (tokens * width + jnp.arange(count, width, dtype=jnp.int32)).reshape(-1)
  # Where each padding entry sorts: after the C * X real ones, in token-major order.
  padding_at = chunk * count + tokens * (width - count) + jnp.arange(width - count,
                                                                     dtype=jnp.int32)

  def one(values, order, inverse):
    real_rows, *extra = rows_of(values[order])
    real_order = (order // count) * width + order % count  # padded token-major
    row = jnp.concatenate([real_rows, jnp.full(padding.shape, rows, jnp.int32)])
    padded = Permutation(
        order=jnp.concatenate([real_order, padding]),
        inverse=jnp.concatenate([inverse.reshape(chunk, count), padding_at], axis=1).reshape(-1))
    return (padded, row, tile_starts(row, rows, 1), *extra)

  lead = values.shape[:-2]
  flat = lambda x: x.reshape(-1, chunk * count).astype(jnp.int32)  # noqa: E731
  return jax.tree.map(lambda x: x.reshape(*lead, *x.shape[1:]),
                      jax.vmap(one)(flat(values), flat(order.order), flat(order.inverse)))


def write_layout(write_pos: jax.Array, slots: jax.Array, write_order: Permutation, *,
                 num_slots: int, width: int, row_tile: int) -> EntryLayout:
  """write_pos [..., C, W] (positions in the sorted unique `slots` [..., U]) and phase 1's
  stable slot order of the write entries `write_order` [..., C * W] (`ChunkIds`); W padded
  to `width`. Rows are the positions: row_slot = slots (padded to a whole number of tiles).
  No sort: phase 1's order is the layout's, padding entries appended in no tile."""
  rows = num_rows(slots.shape[-1], row_tile)
  order, row, begin = _layout_by_order(write_pos, write_order, width=width, rows=rows,
                                       rows_of=lambda pos: (pos,))
  row_slot = pad_entries(slots.astype(jnp.int32), rows, num_slots)
  return EntryLayout(order=order, token=order.order // width, row=row, row_slot=row_slot,
                     row_begin=begin)


def read_layout(read_idx: jax.Array, read_order: Permutation, *, num_slots: int, width: int,
                row_tile: int) -> EntryLayout:
  """read_idx [..., C, R] slot ids and phase 1's stable slot order of the read entries
  `read_order` [..., C * R] (`ChunkIds`); R padded to `width`. Rows are the distinct read
  slots. No sort: phase 1's order is the layout's, padding entries appended in no tile."""
  rows = num_rows(read_idx.shape[-2] * width, row_tile)

  def segments(sorted_slots):  # each entry's row: its slot's rank among the distinct slots
    segment = jnp.cumsum(segment_starts(sorted_slots).astype(jnp.int32)) - 1
    return segment, jnp.full((rows,), num_slots, jnp.int32).at[segment].set(sorted_slots)

  order, row, begin, row_slot = _layout_by_order(read_idx, read_order, width=width,
                                                 rows=rows, rows_of=segments)
  return EntryLayout(order=order, token=order.order // width, row=row, row_slot=row_slot,
                     row_begin=begin)
