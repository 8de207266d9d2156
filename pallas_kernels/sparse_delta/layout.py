"""Integer bookkeeping that lets the phase-2 kernels scatter without atomics.

A chunk's new row for slot s sums the updates of every token that wrote s; the read
cotangents of s likewise sum over every token that read s. The kernels form those sums
with small one-hot matmuls over entries sorted by slot:

* Entries (one per (token, write) or (token, read)) are sorted by slot, ties by token. The
  run of entries of one slot is a *segment*, and each segment is one *row* of the
  chunk's row layout (segment r is row r).
* Rows are cut into tiles of `row_tile` rows. Tile t owns rows [t * row_tile, ...) and the
  contiguous entries of those segments, [entry_begin[t], entry_begin[t + 1]). A segment
  never straddles tiles, so every slot is loaded and stored by exactly one program.
* Rows past the last segment have `row_slot >= num_slots` and are skipped.

For writes, phase 1's positions in the sorted unique slots already are segment ids, so the
rows are `ChunkIds.slots` themselves (row r = position r). Phase 1's sorts
(`ChunkIds.write_order`, `ChunkIds.read_order`) are the entries' orders. W and R are padded to powers of
two with entries that sort after every real one and belong to no tile, so that every block
the kernels load has a power-of-two size.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp


class EntryLayout(NamedTuple):
  """Slot-sorted entries of one chunk and its row tiles. Leading axes [..., n_chunks]."""
  order: jax.Array        # [..., E] token-major index (token * width + i) of sorted entry e
  token: jax.Array        # [..., E] the entry's token
  row: jax.Array          # [..., E] the entry's row (segment); >= rows for padding entries
  row_slot: jax.Array     # [..., rows] slot of each row, >= num_slots past the last segment
  entry_begin: jax.Array  # [..., n_tiles + 1] first entry of each row tile (then E_real)


def pad_entries(x: jax.Array, width: int, fill) -> jax.Array:
  """Pads the last axis of x to `width` with `fill`."""
  pad = width - x.shape[-1]
  if pad == 0:
    return x
  return jnp.concatenate([x, jnp.full((*x.shape[:-1], pad), fill, x.dtype)], axis=-1)


def num_rows(entries: int, row_tile: int) -> int:
  """Rows of the row layout: enough tiles for one segment per entry."""
  return -(-entries // row_tile) * row_tile


def _tile_starts(sorted_rows, rows, row_tile):
  boundaries = jnp.arange(0, rows + 1, row_tile, dtype=jnp.int32)
  return jnp.searchsorted(sorted_rows, boundaries, side="left").astype(jnp.int32)


def write_layout(write_pos: jax.Array, slots: jax.Array, write_order: jax.Array, *,
                 num_slots: int, width: int, row_tile: int) -> EntryLayout:
  """write_pos [..., C, W] (positions in the sorted unique `slots` [..., U]) and phase 1's
  stable slot order of the write entries `write_order` [..., C * W] (`ChunkIds`); W padded
  to `width`. Rows are the positions: row_slot = slots (padded to a whole number of tiles).
  No sort: phase 1's order is the layout's, padding entries appended in no tile."""
  chunk, num_writes = write_pos.shape[-2:]
  rows = num_rows(slots.shape[-1], row_tile)
  tokens = jnp.arange(chunk, dtype=jnp.int32)[:, None]
  padding = (tokens * width + jnp.arange(num_writes, width, dtype=jnp.int32)).reshape(-1)

  def one(positions, order):
    real_order = (order // num_writes) * width + order % num_writes  # padded token-major
    sorted_rows = jnp.concatenate([positions[order],
                                   jnp.full(padding.shape, rows, jnp.int32)])
    return (jnp.concatenate([real_order, padding]), sorted_rows,
            _tile_starts(sorted_rows, rows, row_tile))

  lead = write_pos.shape[:-2]
  positions = write_pos.reshape(-1, chunk * num_writes).astype(jnp.int32)
  orders = write_order.reshape(-1, chunk * num_writes).astype(jnp.int32)
  order, sorted_rows, begin = jax.tree.map(
      lambda x: x.reshape(*lead, *x.shape[1:]), jax.vmap(one)(positions, orders))
  row_slot = pad_entries(slots.astype(jnp.int32), rows, num_slots)
  return EntryLayout(order=order, token=order // width, row=sorted_rows, row_slot=row_slot,
                     entry_begin=begin)


def read_layout(read_idx: jax.Array, read_order: jax.Array, *, num_slots: int, width: int,
                row_tile: int) -> EntryLayout:
  """read_idx [..., C, R] slot ids and phase 1's stable slot order of the read entries
  `read_order` [..., C * R] (`ChunkIds`); R padded to `width`. Rows are the distinct read
  slots. No sort: phase 1's order is the layout's, padding entries appended in no tile."""
  chunk, num_reads = read_idx.shape[-2:]
  rows = num_rows(chunk * width, row_tile)
  tokens = jnp.arange(chunk, dtype=jnp.int32)[:, None]
  padding = (tokens * width + jnp.arange(num_reads, width, dtype=jnp.int32)).reshape(-1)

  def one(keys, order):
    sorted_slots = keys[order]
    starts = jnp.concatenate([jnp.ones((1,), bool), sorted_slots[1:] != sorted_slots[:-1]])
    segment = jnp.cumsum(starts.astype(jnp.int32)) - 1
    row_slot = jnp.full((rows,), num_slots, jnp.int32).at[segment].set(sorted_slots)
    real_order = (order // num_reads) * width + order % num_reads  # padded token-major
    row = jnp.concatenate([segment, jnp.full(padding.shape, rows, jnp.int32)])
    return (jnp.concatenate([real_order, padding]), row, row_slot,
            _tile_starts(row, rows, row_tile))

  lead = read_idx.shape[:-2]
  keys = read_idx.reshape(-1, chunk * num_reads).astype(jnp.int32)
  orders = read_order.reshape(-1, chunk * num_reads).astype(jnp.int32)
  order, row, row_slot, begin = jax.tree.map(
      lambda x: x.reshape(*lead, *x.shape[1:]), jax.vmap(one)(keys, orders))
  return EntryLayout(order=order, token=order // width, row=row, row_slot=row_slot,
                     entry_begin=begin)
