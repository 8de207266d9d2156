"""Phase 1's pair weights, forward and backward as Pallas kernels (Triton on GPU).

For one chunk (DESIGN.md 3.4), the chunk's writes sorted by slot (ties by token) form one
*segment* per unique written slot, table row p: entries j with token u_j, key k_j =
k_{u_j}(s) and L_j = L_{u_j}(s), the slot's cumulative log decay up to and including u_j
(`SlotSegments`). For entries (t, x) of row p = pos[t, x] with weight w and log l = L_t(s):

  P[t, u_j] += w[t, x] k_j exp(l[t, x] - L_j)   for every j in p's segment, causal(t, u_j)

(QK with the reads, u <= t; A with the writes, u < t). The XLA path builds the slot-major
tables K = k_u(s), L = L_u(s) [U + 1, C] from the segments and gathers their rows
(`chunk_pair_weights`); the kernels never form them. The forward kernel walks each entry's
segment (one or two writers per slot at random addressing) and sums its terms into P on
chip. The backward kernel sums, per table row, the cotangents of every entry that hit it:

  dk_j = sum_{(t, x): pos = p} w dP[t, u_j] E,    dL_j = -k_j dk_j
  dw[t, x] = sum_j dP[t, u_j] E k_j,              dl[t, x] = w[t, x] dw[t, x]

with E = causal exp(l - L_j). For QK it walks the slot-sorted entries of each row tile (phase 1's
sorts, `ChunkIds.write_order` and `read_order`), sums their terms into the tile's [rows, C]
cells (row, u) by one-hot matmuls (`onehot.py`) and stores them; dk_j is the cell (row_j,
u_j). No two programs write the same row, so no atomics. A segment's writers have
distinct tokens, so over the walk of an entry's writers each (entry, u) cell gets at most
one term: both kernels place the terms and sum them once after the walk (one one-hot
matmul per block of entries, not one per writer; `sdm_small`'s step on an H100 44.21 ms
against 44.75, WORKSPACE.md, issue 11, session 52). For A (`own_writes`: the entries are
the segments' writes themselves) each write has a lane of its own, which walks its segment
once and sums both of its gradients there: dw as the entry of the segment's other writers,
dk as the writer of the segment's other entries; no cells, no one-hot matmuls
(`sdm_small`'s step on an H100 43.54 ms against 44.35, A's backward kernel 0.18 ms a step
against 0.85; WORKSPACE.md, issue 11, session 53). On the H200, `sdm_small`'s layer
fwd+bwd took 17.24 / 17.57 ms this way against 17.86 / 17.99 with the tables (the backward
kernels 0.49 vs 0.62 ms, QK's forward 0.056 vs 0.124), its peak 4.18 vs 4.36 GB
(WORKSPACE.md, issue 11, session 25).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as pltriton
import jax.numpy as jnp

from pallas_kernels import platform
from pallas_kernels.blocks import next_power_of_two
from pallas_kernels.sparse_delta import layout
from pallas_kernels.sparse_delta.onehot import onehot_matmul
from pallas_kernels.sparse_delta.scan_pallas import gather_rows

IMPLS = ("xla", "pallas")


class SlotSegments(NamedTuple):
  """One chunk's writes sorted by slot, ties by token: the segment of table row p (the
  slot's position among the chunk's unique written slots) is entries [begin[p], begin[p +
  1]). Leading axes [n]; E = C * W entries, U = E rows (row U, the zero row, and the rows
  past the unique slots have empty segments)."""
  begin: jax.Array    # [n, U + 2] int32 first entry of each row's segment, then E
  row: jax.Array      # [n, E] int32 row of each entry (nondecreasing)
  token: jax.Array    # [n, E] int32 the entry's token u
  key: jax.Array      # [n, E] k_u(s)
  cum_log: jax.Array  # [n, E] L_u(s): the slot's log decay summed over its writes to u


class KernelConfig(NamedTuple):
  """Tiling of the kernels (powers of two)."""
  row_tile: int = 64     # backward: table rows per program
  entry_block: int = 64  # backward: slot-sorted entries per one-hot matmul
  num_warps: int = 4
  # Forward: a program sums [tokens, entries, C] blocks of about this many elements
  # (tokens of the chunk per program and entries per loop step follow from it).
  forward_block: int = 4096
  # Backward with `own_writes`: slot-sorted writes (one lane each) per program.
  own_writes_lanes: int = 128


def _causal(tokens, cols, strict: bool):
  """The pairs (t, u) a pair weight sums: u < t (strict) or u <= t, broadcast."""
  return (cols < tokens) if strict else (cols <= tokens)


def segment_tables(segments: SlotSegments, chunk: int):
  """The slot-major tables of n chunks: key_table, cum_log_decay [n, U + 1, C] (K[p, u] =
  k_u(s), L[p, u] = L_u(s) for the slot s of row p, L constant between its writes)."""
  table_rows = segments.begin.shape[-1] - 1

  def one(seg: SlotSegments):
    cells = (seg.row, seg.token)
    empty = jnp.zeros((table_rows, chunk), seg.key.dtype)
    # Each write's step of L: its cumulative log less its segment predecessor's, summed
    # again along the tokens. (Gathering each cell's last writer's value instead is exact,
    # but its gradient keeps an int [U + 1, C] index table: 24 MB more compiled memory in
    # test_gradient_memory_stays_within_ten_tables.)
    first = layout.segment_starts(seg.row)
    previous = jnp.concatenate([jnp.zeros((1,), seg.cum_log.dtype), seg.cum_log[:-1]])
    steps = seg.cum_log - jnp.where(first, 0, previous)
    return (empty.at[cells].add(seg.key),
            jnp.cumsum(empty.at[cells].add(steps), axis=1))

  return jax.vmap(one)(segments)


def chunk_pair_weights(pos, weights, log_at_token, key_table, cum_log_decay, *, strict):
  """P [C, C] of one chunk: pos [C, X] rows of the tables; weights, log_at_token [C, X];
  key_table, cum_log_decay [U + 1, C]. Causal: u < t (strict) or u <= t."""
  tokens = jnp.arange(pos.shape[0])
  causal = _causal(tokens[:, None], tokens[None, :], strict)
  keys = key_table[pos]  # [C, X, C]: k_u(s) for every token u
  gap = log_at_token[:, :, None] - cum_log_decay[pos]
  # Acausal gaps are positive and may overflow; zero them before exp, not after.
  gap = jnp.where(causal[:, None, :], gap, 0)
  return jnp.sum(weights[:, :, None] * keys * jnp.exp(gap), axis=1) * causal


def _every_chunk(pos, weights, log_at_token, key_table, cum_log_decay, strict):
  return jax.vmap(functools.partial(chunk_pair_weights, strict=strict))(
      pos, weights, log_at_token, key_table, cum_log_decay)


# Rematerialised in the backward: its [C, X, C] intermediates would otherwise be saved for
# every chunk (8 float32 tensors of T * X * C, 2.1 GB of the 6.2 GB of residuals of
# sdm_small's layer), while recomputing them is a few gathers and an exp.
_pair_weights_xla = jax.checkpoint(_every_chunk, static_argnums=(5,))


def pair_weights(pos, weights, log_at_token, segments: SlotSegments,
                 order: layout.Permutation, *,
                 strict: bool, impl: str = "xla", config: KernelConfig | None = None,
                 interpret: bool | None = None, own_writes: bool = False):
  """P [n, C, C] of n chunks (every argument with a leading [n] axis): pos [n, C, X] rows
  of the entries (U for the zero row: reads of slots the chunk does not write), weights
  and log_at_token [n, C, X] (w and l = L_t(s)), the chunks' write segments.

  order [n, C * X]: the token-major entries (t * X + x) sorted by slot, ties by token
  (phase 1's sort, a `layout.Permutation`); the backward kernel needs it, the XLA path
  ignores it. Entries whose pos is the zero row U (reads of slots the chunk does not
  write) may sit anywhere in it.
  Differentiable in weights, log_at_token, segments.key and segments.cum_log.
  impl: "xla" (tables from the segments, the fused forward and its autodiff,
  rematerialised) or "pallas" (the forward and backward kernels, float32; interpret mode
  unless on a GPU).
  own_writes: the entries are the segments' writes themselves (pos and order those of the
  writes, X = W: the A pair weights), so the "pallas" backward gives each write a lane that
  walks its own segment (`_own_writes_bwd_kernel`); the XLA path ignores it.
  """
  if impl not in IMPLS:
    raise ValueError(f"impl must be one of {IMPLS}, got {impl!r}")
  if own_writes and order.order.shape[-1] != segments.token.shape[-1]:
    raise ValueError(f"own_writes needs the entries to be the segments' writes: order has "
                     f"{order.order.shape[-1]} entries per chunk, the segments "
                     f"{segments.token.shape[-1]}")
  if impl == "xla":
    # The tables outside the rematerialised part: the QK and A calls build the same ones.
    return _pair_weights_xla(pos, weights, log_at_token,
                             *segment_tables(segments, pos.shape[-2]), strict)
  if interpret is None:
    interpret = not platform.on_gpu()
  return _pair_weights_kernels(pos, weights, log_at_token, segments.begin, segments.row,
                               segments.token, segments.key, segments.cum_log, order,
                               strict, config or KernelConfig(), interpret, own_writes)


def _segment_writer(r, n, begin, end, depth, log_at, tokens, strict):
  """The depth-th writer j of each entry's segment [begin, end) (arrays of one shape):
  (u_j, k_j, causal(t, u_j), E = exp(l - L_j) where causal, else 0)."""
  j = begin + depth
  valid = j < end
  safe = jnp.where(valid, j, 0)  # in bounds for unmasked loads
  u = jnp.where(valid, r["seg_token"][n, safe], 0)
  key = jnp.where(valid, r["seg_key"][n, safe], 0)
  causal = valid & _causal(tokens, u, strict)
  # Acausal gaps are positive and may overflow; zero them before exp, as XLA's does.
  gap = jnp.where(causal, log_at - r["seg_cum_log"][n, safe], 0)
  return u, key, causal, jnp.where(causal, jnp.exp(gap), 0)


def _forward_kernel(*refs, names, strict: bool, token_block: int, entry_block: int):
  """grid (chunks, token blocks): P[t, u_j] = sum_x w[t, x] k_j exp(l[t, x] - L_j) over
  the segment entries j of row pos[t, x], for the block's tokens t, entries x in steps of
  `entry_block`, segments walked writer by writer."""
  r = dict(zip(names, refs))
  n, first = pl.program_id(0), pl.program_id(1) * token_block
  chunk, width = r["pairs"].shape[-1], r["pos"].shape[-1]
  tokens = (first + jnp.arange(token_block, dtype=jnp.int32))[:, None]  # [TB, 1]
  cols = jnp.arange(chunk, dtype=jnp.int32)
  acc = jnp.zeros((token_block, chunk), jnp.float32)
  for x0 in range(0, width, entry_block):
    block = (n, pl.ds(first, token_block), pl.ds(x0, entry_block))
    pos = r["pos"][block]                                           # [TB, EB]
    begin, end = r["begin"][n, pos], r["begin"][n, pos + 1]
    weight, log_at = r["weights"][block], r["log_at_token"][block]

    def writer(depth, terms, begin=begin, end=end, weight=weight, log_at=log_at):
      u, key, causal, decay = _segment_writer(r, n, begin, end, depth, log_at, tokens,
                                              strict)
      # A segment's writers have distinct tokens: each (t, x, u) cell gets at most one term
      # (past its segment an entry's u reads 0: not placed).
      placed = (u[:, :, None] == cols) & causal[:, :, None]
      return jnp.where(placed, (weight * key * decay)[:, :, None], terms)

    terms = lax.fori_loop(0, jnp.max(end - begin), writer,
                          jnp.zeros((token_block, entry_block, chunk), jnp.float32))
    acc = acc + jnp.sum(terms, axis=1)  # summed over the block's entries once
  r["pairs"][n, pl.ds(first, token_block), :] = acc


def _forward(pos, weights, log_at_token, begin, token, key, cum_log, strict,
             config: KernelConfig, interpret):
  """The forward kernel: [n, C, C] float32. Entries are padded to a power of two with the
  zero row U (weight 0, an empty segment), so every block the kernel loads is whole."""
  n, chunk, width = pos.shape
  entry_block = max(1, min(next_power_of_two(width), 64, config.forward_block // chunk))
  token_block = max(1, min(chunk, config.forward_block // (entry_block * chunk)))
  padded = -(-width // entry_block) * entry_block
  pad = lambda x, fill: layout.pad_entries(x, padded, fill)  # noqa: E731
  zero_row = begin.shape[-1] - 2
  inputs = dict(pos=pad(pos.astype(jnp.int32), zero_row),
                weights=pad(weights.astype(jnp.float32), 0),
                log_at_token=pad(log_at_token.astype(jnp.float32), 0),
                begin=begin, seg_token=token, seg_key=key.astype(jnp.float32),
                seg_cum_log=cum_log.astype(jnp.float32))
  return pl.pallas_call(
      functools.partial(_forward_kernel, names=[*inputs, "pairs"], strict=strict,
                        token_block=token_block, entry_block=entry_block),
      name="pair_weights_fwd_kernel",  # names the kernel in profiles
      out_shape=jax.ShapeDtypeStruct((n, chunk, chunk), jnp.float32),
      grid=(n, chunk // token_block),
      interpret=interpret,
      compiler_params=pltriton.CompilerParams(num_warps=config.num_warps, num_stages=1),
  )(*inputs.values())


@functools.partial(jax.custom_vjp, nondiff_argnums=(9, 10, 11, 12))
def _pair_weights_kernels(pos, weights, log_at_token, begin, row, token, key, cum_log, order,
                          strict, config, interpret, own_writes):
  del row, order, own_writes  # the backward's
  pairs = _forward(pos, weights, log_at_token, begin, token, key, cum_log, strict, config,
                   interpret)
  return pairs.astype(weights.dtype)


def _fwd(pos, weights, log_at_token, begin, row, token, key, cum_log, order, strict, config,
         interpret, own_writes):
  out = _pair_weights_kernels(pos, weights, log_at_token, begin, row, token, key, cum_log,
                              order, strict, config, interpret, own_writes)
  return out, (pos, weights, log_at_token, begin, row, token, key, cum_log, order)


def _bwd(strict, config: KernelConfig, interpret, own_writes, residuals, d_pairs):
  pos, weights, log_at_token, begin, row, token, key, cum_log, order = residuals
  if own_writes:
    d_weights, d_key = _own_writes_bwd(pos, weights, log_at_token, begin, key, cum_log,
                                       order, d_pairs, strict, config, interpret)
  else:
    d_weights, d_key = _cells_bwd(pos, weights, log_at_token, begin, row, token, key,
                                  cum_log, order, d_pairs, strict, config, interpret)
  d_log = weights.astype(jnp.float32) * d_weights
  d_cum_log = -key.astype(jnp.float32) * d_key  # d/dL_j of k_j exp(l - L_j) is -k_j E
  return (None, d_weights.astype(weights.dtype), d_log.astype(log_at_token.dtype), None,
          None, None, d_key.astype(key.dtype), d_cum_log.astype(cum_log.dtype), None)


_pair_weights_kernels.defvjp(_fwd, _bwd)


def _entry_inputs(pos, weights, log_at_token, begin, key, cum_log, order):
  """What both backward kernels read of the slot-sorted entries [n, C * X] and of the
  segments [n, E] (float32), and each entry's row (-1 for the zero row U) and whether it
  has one."""
  n, _, width = pos.shape
  table_rows = begin.shape[-1] - 1  # U + 1; row U is the zero row
  # `order` is a permutation of each chunk's entries (phase 1's sort).
  by_entry = lambda x: layout.permuted(x.reshape(n, -1), order)  # noqa: E731
  entry_row = by_entry(pos.astype(jnp.int32))
  valid = entry_row < table_rows - 1
  # Each entry's segment bounds, gathered here so that the kernels' loads of its writers
  # wait on one load less.
  safe_row = jnp.where(valid, entry_row, table_rows - 1)  # the zero row: an empty segment
  segment = lambda shift: layout.gather_last(begin, safe_row + shift)  # noqa: E731
  inputs = dict(entry_token=order.order // width,
                entry_weight=by_entry(weights).astype(jnp.float32),
                entry_log=by_entry(log_at_token).astype(jnp.float32),
                entry_seg_begin=segment(0), entry_seg_end=segment(1),
                seg_key=key.astype(jnp.float32), seg_cum_log=cum_log.astype(jnp.float32))
  return inputs, jnp.where(valid, entry_row, -1), valid


def _own_writes_bwd(pos, weights, log_at_token, begin, key, cum_log, order, d_pairs, strict,
                    config: KernelConfig, interpret):
  """(d_weights [n, C, X], d_key [n, E]) by `_own_writes_bwd_kernel`."""
  n, chunk, _ = pos.shape
  lanes = config.own_writes_lanes
  entries = order.order.shape[-1]
  padded = -(-entries // lanes) * lanes
  inputs, _, _ = _entry_inputs(pos, weights, log_at_token, begin, key, cum_log, order)
  inputs.update(d_pairs=d_pairs.astype(jnp.float32).reshape(n, chunk * chunk))
  per_lane = jax.ShapeDtypeStruct((n, padded), jnp.float32)
  d_entry_weight, d_key = pl.pallas_call(
      functools.partial(_own_writes_bwd_kernel, names=[*inputs, "d_entry_weight", "d_key"],
                        strict=strict, chunk=chunk, lanes=lanes),
      name="pair_weights_own_writes_bwd_kernel",  # names the kernel in profiles
      out_shape=[per_lane, per_lane],
      grid=(n, padded // lanes),
      interpret=interpret,
      compiler_params=pltriton.CompilerParams(num_warps=config.num_warps, num_stages=1),
  )(*inputs.values())
  d_weights = layout.unpermuted(d_entry_weight[:, :entries], order).reshape(pos.shape)
  return d_weights, d_key[:, :entries]


def _own_writes_bwd_kernel(*refs, names, strict: bool, chunk: int, lanes: int):
  """grid (chunks, lane blocks): write j (slot-sorted; entry and writer at once) walks its
  segment's writes i once, summing in its lane

    dw_j = sum_i dP[t_j, u_i] E(j, i) k_i     (j the entry, i its writer)
    dk_j = sum_i w_i dP[t_i, u_j] E(i, j)     (j the writer, i the entry)

  with E(a, b) = causal(t_a, u_b) exp(l_a - L_b), t = u the write's token."""
  r = dict(zip(names, refs))
  n, first = pl.program_id(0), pl.program_id(1) * lanes
  num_entries = r["entry_token"].shape[-1]
  entries = first + jnp.arange(lanes, dtype=jnp.int32)
  in_range = entries < num_entries
  safe = jnp.where(in_range, entries, 0)  # in bounds for unmasked loads
  token = r["entry_token"][n, safe]
  log_at, own_cum_log = r["entry_log"][n, safe], r["seg_cum_log"][n, safe]
  seg_begin = jnp.where(in_range, r["entry_seg_begin"][n, safe], 0)
  seg_end = jnp.where(in_range, r["entry_seg_end"][n, safe], 0)

  def other(depth, sums):
    d_weight, d_key = sums
    i = seg_begin + depth
    valid = i < seg_end
    at = jnp.where(valid, i, 0)
    other_token = r["entry_token"][n, at]
    as_entry = valid & _causal(token, other_token, strict)   # i wrote before t_j
    as_writer = valid & _causal(other_token, token, strict)  # j wrote before t_i
    # Acausal gaps are positive and may overflow; zero them before exp, as XLA's does.
    gap_entry = jnp.where(as_entry, log_at - r["seg_cum_log"][n, at], 0)
    gap_writer = jnp.where(as_writer, r["entry_log"][n, at] - own_cum_log, 0)
    d_pairs_entry = r["d_pairs"][n, jnp.where(as_entry, token * chunk + other_token, 0)]
    d_pairs_writer = r["d_pairs"][n, jnp.where(as_writer, other_token * chunk + token, 0)]
    d_weight += jnp.where(as_entry, d_pairs_entry * jnp.exp(gap_entry) * r["seg_key"][n, at],
                          0)
    d_key += jnp.where(as_writer,
                       r["entry_weight"][n, at] * d_pairs_writer * jnp.exp(gap_writer), 0)
    return d_weight, d_key

  zeros = jnp.zeros((lanes,), jnp.float32)
  d_weight, d_key = lax.fori_loop(0, jnp.max(seg_end - seg_begin), other, (zeros, zeros))
  r["d_entry_weight"][n, pl.ds(first, lanes)] = d_weight
  r["d_key"][n, pl.ds(first, lanes)] = d_key


def _cells_bwd(pos, weights, log_at_token, begin, row, token, key, cum_log, order, d_pairs,
               strict, config: KernelConfig, interpret):
  """(d_weights [n, C, X], d_key [n, E]) by `_bwd_kernel` (any entries: reads or writes)."""
  n, chunk, width = pos.shape
  rows = layout.num_rows(begin.shape[-1] - 1, config.row_tile)
  inputs, entry_row, valid = _entry_inputs(pos, weights, log_at_token, begin, key, cum_log,
                                           order)
  # Tile t owns the entries from the first valid one of row >= t * row_tile: a running max
  # of the rows skips the invalid entries interleaved among them (the kernel masks those).
  entry_begin = jax.vmap(lambda r: layout.tile_starts(r, rows, config.row_tile))(
      lax.cummax(entry_row, axis=1))
  inputs.update(entry_begin=entry_begin, entry_row=entry_row,
                d_pairs=d_pairs.astype(jnp.float32), seg_token=token)
  outputs = dict(d_cells=jax.ShapeDtypeStruct((n, rows, chunk), jnp.float32),
                 d_entry_weight=jax.ShapeDtypeStruct((n, chunk * width), jnp.float32))
  names = list(inputs) + list(outputs)
  d_cells, d_entry_weight = pl.pallas_call(
      functools.partial(_bwd_kernel, names=names, strict=strict, config=config),
      name="pair_weights_bwd_kernel",  # names the kernel in profiles
      out_shape=list(outputs.values()),
      grid=(n, rows // config.row_tile),
      interpret=interpret,
      compiler_params=pltriton.CompilerParams(num_warps=config.num_warps, num_stages=1),
  )(*inputs.values())
  # dk_j is the cell of its row and token (every other cell of a row has no writer).
  d_key = jax.vmap(lambda cells, r, u: cells[r, u])(d_cells, row, token)
  # Entries in no tile were never written: they are the ones of row U, whose gradient is 0.
  d_entry_weight = jnp.where(valid, d_entry_weight, 0)
  d_weights = layout.unpermuted(d_entry_weight, order)
  return d_weights.reshape(weights.shape), d_key


def _bwd_kernel(*refs, names, strict: bool, config: KernelConfig):
  """grid (chunks, row tiles): dw of the tile's entries and the tile's cells (row, u) =
  sum w dP[t, u] E over the entries of the row (dk_j is the cell (row_j, u_j))."""
  r = dict(zip(names, refs))
  n, tile = pl.program_id(0), pl.program_id(1)
  rows, block = config.row_tile, config.entry_block
  chunk = r["d_pairs"].shape[-1]
  num_entries = r["entry_row"].shape[-1]
  first = tile * rows
  begin, end = r["entry_begin"][n, tile], r["entry_begin"][n, tile + 1]
  cols = jnp.arange(chunk, dtype=jnp.int32)
  row_ids = lax.broadcasted_iota(jnp.int32, (rows, block), 0)

  def entry_block(k, cells):
    entries = begin + k * block + jnp.arange(block, dtype=jnp.int32)
    in_range = entries < end
    safe = jnp.where(in_range, entries, num_entries - 1)  # in bounds for unmasked loads
    row = r["entry_row"][n, safe]
    valid = in_range & (row >= 0)
    token = r["entry_token"][n, safe]
    weight = jnp.where(valid, r["entry_weight"][n, safe], 0)
    log_at = r["entry_log"][n, safe]
    seg_begin = jnp.where(valid, r["entry_seg_begin"][n, safe], 0)
    seg_end = jnp.where(valid, r["entry_seg_end"][n, safe], 0)
    d_pairs = gather_rows(r["d_pairs"], (n,), token, cols, valid)    # [EB, C]: dP[t, :]
    onehot = jnp.where(valid, row - first, -1)[None, :] == row_ids  # [rows, EB]

    def writer(depth, acc):
      cell_terms, d_weight = acc
      u, key, causal, decay = _segment_writer(r, n, seg_begin, seg_end, depth, log_at,
                                              token, strict)
      at_u = u[:, None] == cols                                      # [EB, C]
      scaled = jnp.sum(jnp.where(at_u, d_pairs, 0), axis=1) * decay  # dP[t, u_j] E
      # A segment's writers have distinct tokens, so each (entry, u) cell gets at most one
      # term: placed, not summed (past its segment an entry's u reads 0: not placed).
      cell_terms = jnp.where(at_u & causal[:, None], (weight * scaled)[:, None], cell_terms)
      return cell_terms, d_weight + scaled * key

    cell_terms, d_weight = lax.fori_loop(
        0, jnp.max(seg_end - seg_begin), writer,
        (jnp.zeros((block, chunk), jnp.float32), jnp.zeros((block,), jnp.float32)))
    # Invalid lanes go out of bounds: masked stores never alias a valid lane's address.
    pltriton.store(r["d_entry_weight"].at[n, jnp.where(valid, entries, num_entries)],
                   d_weight, mask=valid)
    # The one-hot matrix is the block's (entry rows), whatever the writer: one matmul per
    # block sums every writer's terms into the rows' cells.
    return cells + onehot_matmul(onehot, cell_terms, 3)

  r["d_cells"][n, pl.ds(first, rows), :] = lax.fori_loop(
      0, (end - begin + block - 1) // block, entry_block, jnp.zeros((rows, chunk), jnp.float32))


__all__ = ["IMPLS", "KernelConfig", "SlotSegments", "chunk_pair_weights", "pair_weights",
           "segment_tables"]
