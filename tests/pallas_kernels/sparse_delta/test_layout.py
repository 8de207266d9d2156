"""The slot-sorted entry layout: every entry lands in the row tile of its slot's row."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pallas_kernels.sparse_delta import layout


def _scatter_by_layout(entries: layout.EntryLayout, values, num_slots, row_tile):
  """Sums token-major `values` [C * width] per slot the way the kernels do: row by row
  over each row's segment [row_begin[r], row_begin[r + 1]), stored at the row's slot."""
  order, row = np.asarray(entries.order.order), np.asarray(entries.row)
  row_slot, begin = np.asarray(entries.row_slot), np.asarray(entries.row_begin)
  assert len(begin) == len(row_slot) + 1 and len(row_slot) % row_tile == 0
  sums = np.zeros(num_slots)
  for r, slot in enumerate(row_slot):
    total = 0.0
    for e in range(begin[r], begin[r + 1]):
      assert row[e] == r  # the segment's entries are the row's
      total += values[order[e]]
    if slot < num_slots:
      assert sums[slot] == 0  # each slot is stored by one row only
      sums[slot] = total
    else:
      assert begin[r] == begin[r + 1]  # skipped rows hold no entries
  assert begin[-1] == np.sum(row < len(row_slot))  # every real entry, padding after
  return sums


@pytest.mark.parametrize("reads,width,row_tile", [(4, 4, 8), (3, 4, 4), (5, 8, 16)])
def test_read_layout_sums_every_entry_once(reads, width, row_tile):
  rng = np.random.default_rng(reads)
  num_slots, chunk = 12, 7  # heavy reuse: 7 tokens x `reads` ids over 12 slots
  read_idx = rng.integers(0, num_slots, (chunk, reads))
  order = np.argsort(read_idx.reshape(-1), kind="stable")  # phase 1's sort
  entries = layout.read_layout(jnp.asarray(read_idx)[None],
                               layout.permutation(jnp.asarray(order)[None]),
                               num_slots=num_slots, width=width, row_tile=row_tile)
  entries = jax.tree.map(lambda x: np.asarray(x)[0], entries)
  values = rng.standard_normal(chunk * width)
  values.reshape(chunk, width)[:, reads:] = 0  # padding entries carry nothing
  want = np.zeros(num_slots)
  np.add.at(want, read_idx.reshape(-1), values.reshape(chunk, width)[:, :reads].reshape(-1))
  np.testing.assert_allclose(_scatter_by_layout(entries, values, num_slots, row_tile), want)
  # Entries sorted by slot, ties by token.
  slots = np.asarray(entries.row_slot)[np.minimum(entries.row, len(entries.row_slot) - 1)]
  real = np.asarray(entries.row) < len(entries.row_slot)
  assert np.all(np.diff(slots[real]) >= 0)


def test_write_layout_rows_are_the_unique_positions():
  num_slots, row_tile = 50, 4
  write_idx = np.array([[3, 7, 11], [7, 11, 20], [3, 20, 42]])  # 3 tokens, W = 3
  slots, write_pos = np.unique(write_idx, return_inverse=True)
  slots = np.concatenate([slots, num_slots + np.arange(write_idx.size - len(slots))])
  order = np.argsort(write_idx.reshape(-1), kind="stable")  # phase 1's sort
  entries = layout.write_layout(jnp.asarray(write_pos.reshape(3, 3))[None],
                                jnp.asarray(slots)[None],
                                layout.permutation(jnp.asarray(order)[None]),
                                num_slots=num_slots, width=4, row_tile=row_tile)
  entries = jax.tree.map(lambda x: np.asarray(x)[0], entries)
  assert entries.row_slot.shape == (layout.num_rows(9, row_tile),)
  np.testing.assert_array_equal(entries.row_slot[:5], [3, 7, 11, 20, 42])
  assert np.all(entries.row_slot[5:] >= num_slots)
  values = np.arange(1, 13, dtype=float)  # token-major, width 4 (last of each token padding)
  values.reshape(3, 4)[:, 3] = 0
  want = np.zeros(num_slots)
  np.add.at(want, write_idx.reshape(-1), values.reshape(3, 4)[:, :3].reshape(-1))
  np.testing.assert_allclose(_scatter_by_layout(entries, values, num_slots, row_tile), want)
  np.testing.assert_array_equal(entries.token[:9], np.asarray(entries.order.order[:9]) // 4)
  # Entries sorted by slot, ties by token; the three padding entries last.
  np.testing.assert_array_equal(entries.row[:9], np.sort(write_pos.reshape(-1), kind="stable"))
  np.testing.assert_array_equal(entries.order.order[9:], [3, 7, 11])


@pytest.mark.parametrize("row_tile", [1, 4])
def test_tile_starts_count_the_entries_before_each_tile(row_tile):
  """Against a binary search over random nondecreasing rows in [-1, rows] (-1: entries
  before every tile, as the pair-weight backward kernel's running max leaves them; rows: padding),
  empty tiles and rows included."""
  rows = 32
  rng = np.random.default_rng(row_tile)
  sorted_rows = np.sort(np.concatenate([[-1, -1], rng.integers(0, rows // 2, size=20), [rows] * 3]))
  want = np.searchsorted(sorted_rows, np.arange(0, rows + 1, row_tile), side="left")
  got = layout.tile_starts(jnp.asarray(sorted_rows, jnp.int32), rows, row_tile)
  assert got.dtype == jnp.int32 and (np.diff(want) == 0).any()  # some tiles are empty
  np.testing.assert_array_equal(np.asarray(got), want)


def test_segment_starts_mark_the_first_entry_of_each_run():
  starts = layout.segment_starts(jnp.asarray([2, 2, 5, 7, 7, 7, 9], jnp.int32))
  np.testing.assert_array_equal(np.asarray(starts), [1, 0, 1, 1, 0, 0, 1])


@pytest.mark.parametrize("max_length", [4, 2**27])  # one sort key; the argsort's fallback
def test_depth_order_puts_long_segments_first_and_keeps_row_order_among_equals(max_length):
  rng = np.random.default_rng(3)
  lengths = rng.integers(0, 5, (3, 24))
  row_begin = np.concatenate([np.zeros((3, 1), int), np.cumsum(lengths, axis=1)], axis=1)
  order = np.asarray(layout.depth_order(jnp.asarray(row_begin, jnp.int32), max_length))
  assert order.dtype == np.int32
  for rows, row_lengths in zip(order, lengths):
    assert sorted(rows) == list(range(24))  # a permutation of the rows
    ordered = row_lengths[rows]
    assert np.all(np.diff(ordered) <= 0)  # longest first
    for length in set(ordered):  # among equal lengths, rows in their layout order
      assert np.all(np.diff(rows[ordered == length]) > 0)


@pytest.mark.parametrize("row_order", ["slot", "depth"])
def test_row_tiles_hold_each_rows_slot_and_segment_at_its_position(row_order):
  rng = np.random.default_rng(4)
  read_idx = rng.integers(0, 40, (2, 8, 4)).astype(np.int32)  # [chunks, C, R], repeats
  read_order = np.argsort(read_idx.reshape(2, -1), axis=-1, kind="stable").astype(np.int32)
  entries = layout.read_layout(jnp.asarray(read_idx), layout.permutation(jnp.asarray(read_order)),
                               num_slots=40, width=4, row_tile=8)
  tiles = layout.row_tiles(entries, row_order)
  row_slot, begin = np.asarray(entries.row_slot), np.asarray(entries.row_begin)
  rows = (np.broadcast_to(np.arange(row_slot.shape[-1]), row_slot.shape)
          if tiles.rows is None else np.asarray(tiles.rows))
  assert (tiles.rows is None) == (row_order == "slot")
  lengths = np.take_along_axis(begin[:, 1:] - begin[:, :-1], rows, axis=-1)
  assert row_order == "slot" or np.all(np.diff(lengths, axis=-1) <= 0)
  for chunk in range(2):
    for position, row in enumerate(rows[chunk]):
      assert tiles.slot[chunk, position] == row_slot[chunk, row]
      assert tiles.begin[chunk, position] == begin[chunk, row]
      assert tiles.end[chunk, position] == begin[chunk, row + 1]


def test_row_tiles_reject_an_unknown_row_order():
  entries = layout.read_layout(jnp.zeros((1, 2, 2), jnp.int32),
                               layout.permutation(jnp.arange(4, dtype=jnp.int32)[None]),
                               num_slots=4, width=2, row_tile=4)
  with pytest.raises(ValueError, match="row_order"):
    layout.row_tiles(entries, "random")


def _permutation_case(seed):
  """(values [3, 2, 16], order: a permutation of the last axis per leading index, grad):
  grad(f) is the gradient at values of sum(w * f(x)) for random weights w."""
  rng = np.random.default_rng(seed)
  values = jnp.asarray(rng.normal(size=(3, 2, 16)), jnp.float32)
  order = jnp.asarray(np.stack([np.stack([rng.permutation(16) for _ in range(2)])
                                for _ in range(3)]), jnp.int32)
  weights = jnp.asarray(rng.normal(size=(3, 2, 16)), jnp.float32)
  return values, order, lambda f: jax.grad(lambda x: jnp.sum(weights * f(x)))(values)


def test_inverse_order_inverts_every_leading_index():
  _, order, _ = _permutation_case(4)
  inverse = np.asarray(layout.inverse_order(order))
  np.testing.assert_array_equal(np.take_along_axis(np.asarray(order), inverse, axis=-1),
                                np.broadcast_to(np.arange(16), order.shape))


def test_permuted_matches_take_along_axis_and_its_gradient():
  values, order, grad = _permutation_case(5)
  perm = layout.permutation(order)
  np.testing.assert_array_equal(layout.permuted(values, perm),
                                jnp.take_along_axis(values, order, axis=-1))
  np.testing.assert_array_equal(
      grad(lambda x: layout.permuted(x, perm)),
      grad(lambda x: jnp.take_along_axis(x, order, axis=-1)))


def test_unpermuted_inverts_permuted_and_matches_a_scatter_and_its_gradient():
  values, order, grad = _permutation_case(6)
  perm = layout.permutation(order)
  scatter = lambda x: jax.vmap(jax.vmap(  # noqa: E731
      lambda v, o: jnp.zeros_like(v).at[o].set(v)))(x, order)
  np.testing.assert_array_equal(layout.unpermuted(values, perm), scatter(values))
  np.testing.assert_array_equal(layout.unpermuted(layout.permuted(values, perm), perm),
                                values)
  np.testing.assert_array_equal(grad(lambda x: layout.unpermuted(x, perm)), grad(scatter))


def test_permuted_under_vmap_and_jit_matches_take_along_axis():
  values, order, grad = _permutation_case(7)
  perm = layout.permutation(order)
  f = jax.jit(jax.vmap(layout.permuted))
  np.testing.assert_array_equal(f(values, perm), jnp.take_along_axis(values, order, axis=-1))
  np.testing.assert_array_equal(
      grad(lambda x: jax.vmap(layout.unpermuted)(x, perm)),
      grad(lambda x: layout.unpermuted(x, perm)))


def test_matched_gather_takes_each_entry_once_and_its_transpose_gathers_back():
  """out [2, 5] from values [2, 8]: some positions empty (-1), some entries untaken."""
  rng = np.random.default_rng(8)
  values = jnp.asarray(rng.normal(size=(2, 8)), jnp.float32)
  index = np.array([[3, -1, 0, 7, 5], [-1, 6, 1, -1, 2]], np.int32)
  back = np.full((2, 8), -1, np.int32)
  for b in range(2):
    for p, i in enumerate(index[b]):
      if i >= 0:
        back[b, i] = p
  want = np.where(index >= 0, np.take_along_axis(np.asarray(values), np.maximum(index, 0),
                                                 axis=-1), 0)
  got = layout.matched_gather(values, jnp.asarray(index), jnp.asarray(back))
  np.testing.assert_array_equal(got, want)
  weights = jnp.asarray(rng.normal(size=(2, 5)), jnp.float32)
  d_values = jax.grad(lambda x: jnp.sum(weights * layout.matched_gather(
      x, jnp.asarray(index), jnp.asarray(back))))(values)
  d_want = jax.grad(lambda x: jnp.sum(weights * jnp.where(
      index >= 0, jnp.take_along_axis(x, jnp.maximum(index, 0), axis=-1), 0)))(values)
  np.testing.assert_array_equal(d_values, d_want)


def test_gather_last_rejects_other_leading_axes():
  with pytest.raises(ValueError, match="leading axes"):
    layout.gather_last(jnp.zeros((2, 4)), jnp.zeros((3, 4), jnp.int32))


@pytest.mark.parametrize("width", [3, 5])
def test_padded_layout_order_has_its_inverse(width):
  """The layouts pad each token's entries to `width`; the padded order's inverse is built
  from phase 1's without a scatter and must invert it."""
  rng = np.random.default_rng(width)
  read_idx = rng.integers(0, 9, (2, 6, 3)).astype(np.int32)  # [chunks, C, R]
  order = np.argsort(read_idx.reshape(2, -1), axis=-1, kind="stable").astype(np.int32)
  entries = layout.read_layout(jnp.asarray(read_idx), layout.permutation(jnp.asarray(order)),
                               num_slots=9, width=width, row_tile=4)
  padded, inverse = np.asarray(entries.order.order), np.asarray(entries.order.inverse)
  assert sorted(padded[0]) == list(range(6 * width))
  np.testing.assert_array_equal(np.take_along_axis(padded, inverse, axis=-1),
                                np.broadcast_to(np.arange(6 * width), padded.shape))
