"""Phase 1's pair weights, forward and backward as Pallas kernels (Triton on GPU).

For one chunk (DESIGN.md 3.4), with slot-major tables K = k_u(s) and L = L_u(s) [U + 1, C]
over the chunk's unique written slots and entries (t, x) of slot row p = pos[t, x]:

  P[t, u] = causal(t, u) sum_x w[t, x] K[p, u] exp(l[t, x] - L[p, u])

(QK with the reads, u <= t; A with the writes, u < t.) The XLA forward gathers, exps and
sums over x; on the H200 XLA materialises its [C, X, C] gathers (two float32 tensors of
T * X * C per pair weight, in transposed layouts) before the sum. The forward kernel
gathers each program's table rows and sums them on chip: `sdm_small`'s layer fwd+bwd
took 18.12 ms with it against 18.54 (WORKSPACE.md, issue 11, session 24).
The backward sums, for each table row, the cotangents of every entry that hit it:

  dK[p, u] = sum_{(t, x): pos = p} w dP[t, u] E,    dL[p, u] = -sum w dP[t, u] E K[p, u]
  dw[t, x] = sum_u dP[t, u] E K[p, u],              dl[t, x] = w[t, x] dw[t, x]

with E = causal exp(l - L). XLA forms dK and dL as scatter-adds of float32 [C, X, C]
tensors for all chunks at once: at `sdm_small`'s layer on the H200 they held 3.7 of the
5.2 GiB peak and, with their layout transposes, took about 3 ms. The kernel instead walks
the slot-sorted entries of each row tile (phase 1's sorts, `ChunkIds.write_order` and
`read_order`) and sums them with one-hot matmuls (`onehot.py`): nothing of
size [C, X, C] reaches memory, and no two programs write the same row, so no atomics.
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


class KernelConfig(NamedTuple):
  """Tiling of the kernels (powers of two)."""
  row_tile: int = 64     # backward: table rows per program
  entry_block: int = 64  # backward: slot-sorted entries per one-hot matmul
  num_warps: int = 4
  # Forward: a program sums [tokens, entries, C] gathered blocks of about this many
  # elements (tokens of the chunk per program and entries per loop step follow from it).
  forward_block: int = 4096


def _causal(tokens, cols, strict: bool):
  """[T, C] mask of the pairs (t, u) a pair weight sums: u < t (strict) or u <= t."""
  return (cols[None, :] < tokens[:, None]) if strict else (cols[None, :] <= tokens[:, None])


def chunk_pair_weights(pos, weights, log_at_token, key_table, cum_log_decay, *, strict):
  """P [C, C] of one chunk: pos [C, X] rows of the tables; weights, log_at_token [C, X];
  key_table, cum_log_decay [U + 1, C]. Causal: u < t (strict) or u <= t."""
  tokens = jnp.arange(pos.shape[0])
  causal = _causal(tokens, tokens, strict)
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


def pair_weights(pos, weights, log_at_token, key_table, cum_log_decay, order, *,
                 strict: bool, impl: str = "xla", config: KernelConfig | None = None,
                 interpret: bool | None = None):
  """`chunk_pair_weights` of n chunks (every argument with a leading [n] axis).

  order [n, C * X]: the token-major entries (t * X + x) sorted by slot, ties by token
  (phase 1's sort); the backward kernel needs it, the XLA path ignores it. Entries whose
  pos is the all-zero row U (reads of slots the chunk does not write) may sit anywhere in it.
  impl: "xla" (the fused forward and its autodiff, rematerialised) or "pallas" (the
  forward and backward kernels, float32; interpret mode unless on a GPU).
  """
  if impl not in IMPLS:
    raise ValueError(f"impl must be one of {IMPLS}, got {impl!r}")
  if impl == "xla":
    return _pair_weights_xla(pos, weights, log_at_token, key_table, cum_log_decay, strict)
  if interpret is None:
    interpret = not platform.on_gpu()
  return _pair_weights_kernels(pos, weights, log_at_token, key_table, cum_log_decay,
                               order, strict, config or KernelConfig(), interpret)


def _forward_kernel(*refs, names, strict: bool, token_block: int, entry_block: int):
  """grid (chunks, token blocks): P[t] = causal sum_x w[t, x] K[p] exp(l[t, x] - L[p]) for
  the block's tokens t, p = pos[t, x], entries x in steps of `entry_block`."""
  r = dict(zip(names, refs))
  n, first = pl.program_id(0), pl.program_id(1) * token_block
  chunk, width = r["key_table"].shape[-1], r["pos"].shape[-1]
  tokens = first + jnp.arange(token_block, dtype=jnp.int32)
  cols = jnp.arange(chunk, dtype=jnp.int32)
  causal = _causal(tokens, cols, strict)
  acc = jnp.zeros((token_block, chunk), jnp.float32)
  for x0 in range(0, width, entry_block):
    block = (n, pl.ds(first, token_block), pl.ds(x0, entry_block))
    pos = r["pos"][block]                                           # [TB, EB]
    everywhere = jnp.full(pos.shape, True)
    keys = gather_rows(r["key_table"], (n,), pos, cols, everywhere)  # [TB, EB, C]
    logs = gather_rows(r["cum_log_decay"], (n,), pos, cols, everywhere)
    # Acausal gaps are positive and may overflow; zero them before exp, as XLA's does.
    gap = jnp.where(causal[:, None, :], r["log_at_token"][block][:, :, None] - logs, 0)
    acc = acc + jnp.sum(r["weights"][block][:, :, None] * keys * jnp.exp(gap), axis=1)
  r["pairs"][n, pl.ds(first, token_block), :] = jnp.where(causal, acc, 0)


def _forward(pos, weights, log_at_token, key_table, cum_log_decay, strict,
             config: KernelConfig, interpret):
  """The forward kernel: [n, C, C] float32. Entries are padded to a power of two with the
  zero row U (weight 0), so every block the kernel loads is whole."""
  n, chunk, width = pos.shape
  entry_block = max(1, min(next_power_of_two(width), 64, config.forward_block // chunk))
  token_block = max(1, min(chunk, config.forward_block // (entry_block * chunk)))
  padded = -(-width // entry_block) * entry_block
  pad = lambda x, fill: layout.pad_entries(x, padded, fill)  # noqa: E731
  table_rows = key_table.shape[-2]
  inputs = dict(pos=pad(pos.astype(jnp.int32), table_rows - 1),
                weights=pad(weights.astype(jnp.float32), 0),
                log_at_token=pad(log_at_token.astype(jnp.float32), 0),
                key_table=key_table.astype(jnp.float32),
                cum_log_decay=cum_log_decay.astype(jnp.float32))
  return pl.pallas_call(
      functools.partial(_forward_kernel, names=[*inputs, "pairs"], strict=strict,
                        token_block=token_block, entry_block=entry_block),
      name="pair_weights_fwd_kernel",  # names the kernel in profiles
      out_shape=jax.ShapeDtypeStruct((n, chunk, chunk), jnp.float32),
      grid=(n, chunk // token_block),
      interpret=interpret,
      compiler_params=pltriton.CompilerParams(num_warps=config.num_warps, num_stages=1),
  )(*inputs.values())


@functools.partial(jax.custom_vjp, nondiff_argnums=(6, 7, 8))
def _pair_weights_kernels(pos, weights, log_at_token, key_table, cum_log_decay, order,
                          strict, config, interpret):
  del order  # the backward's
  pairs = _forward(pos, weights, log_at_token, key_table, cum_log_decay, strict, config,
                   interpret)
  return pairs.astype(weights.dtype)


def _fwd(pos, weights, log_at_token, key_table, cum_log_decay, order, strict, config,
         interpret):
  out = _pair_weights_kernels(pos, weights, log_at_token, key_table, cum_log_decay,
                              order, strict, config, interpret)
  return out, (pos, weights, log_at_token, key_table, cum_log_decay, order)


def _bwd(strict, config: KernelConfig, interpret, residuals, d_pairs):
  pos, weights, log_at_token, key_table, cum_log_decay, order = residuals
  n, chunk, width = pos.shape
  table_rows = key_table.shape[-2]  # U + 1; row U is all zeros
  rows = layout.num_rows(table_rows, config.row_tile)
  entry_row = jnp.take_along_axis(pos.reshape(n, -1).astype(jnp.int32), order, axis=-1)
  valid = entry_row < table_rows - 1
  entry_row = jnp.where(valid, entry_row, -1)
  # Tile t owns the entries from the first valid one of row >= t * row_tile: a running max
  # of the rows skips the invalid entries interleaved among them (the kernel masks those).
  entry_begin = jax.vmap(lambda r: layout.tile_starts(r, rows, config.row_tile))(
      lax.cummax(entry_row, axis=1))
  by_entry = lambda x: jnp.take_along_axis(  # noqa: E731
      x.reshape(n, -1).astype(jnp.float32), order, axis=-1)
  inputs = dict(entry_begin=entry_begin, entry_row=entry_row, entry_token=order // width,
                entry_weight=by_entry(weights), entry_log=by_entry(log_at_token),
                d_pairs=d_pairs.astype(jnp.float32), key_table=key_table.astype(jnp.float32),
                cum_log_decay=cum_log_decay.astype(jnp.float32))
  table = jax.ShapeDtypeStruct((n, rows, chunk), jnp.float32)
  outputs = dict(d_key_table=table, d_cum_log_decay=table,
                 d_entry_weight=jax.ShapeDtypeStruct((n, chunk * width), jnp.float32))
  names = list(inputs) + list(outputs)
  results = pl.pallas_call(
      functools.partial(_bwd_kernel, names=names, strict=strict, config=config),
      name="pair_weights_bwd_kernel",  # names the kernel in profiles
      out_shape=list(outputs.values()),
      grid=(n, rows // config.row_tile),
      interpret=interpret,
      compiler_params=pltriton.CompilerParams(num_warps=config.num_warps, num_stages=1),
  )(*inputs.values())
  d_key_table, d_cum_log_decay, d_entry_weight = results
  # Entries in no tile were never written: they are the ones of row U, whose gradient is 0.
  d_entry_weight = jnp.where(valid, d_entry_weight, 0)
  d_weights = jax.vmap(lambda d, o: jnp.zeros_like(d).at[o].set(d))(d_entry_weight, order)
  d_weights = d_weights.reshape(weights.shape)
  d_log = weights.astype(jnp.float32) * d_weights
  return (None, d_weights.astype(weights.dtype), d_log.astype(log_at_token.dtype),
          d_key_table[:, :table_rows].astype(key_table.dtype),
          d_cum_log_decay[:, :table_rows].astype(cum_log_decay.dtype), None)


_pair_weights_kernels.defvjp(_fwd, _bwd)


def _bwd_kernel(*refs, names, strict: bool, config: KernelConfig):
  """grid (chunks, row tiles): the tile's rows of dK and dL, and dw of its entries."""
  r = dict(zip(names, refs))
  n, tile = pl.program_id(0), pl.program_id(1)
  rows, block = config.row_tile, config.entry_block
  chunk = r["d_pairs"].shape[-1]
  num_entries = r["entry_row"].shape[-1]
  first = tile * rows
  begin, end = r["entry_begin"][n, tile], r["entry_begin"][n, tile + 1]
  cols = jnp.arange(chunk, dtype=jnp.int32)
  row_ids = lax.broadcasted_iota(jnp.int32, (rows, block), 0)

  def body(k, acc):
    d_keys, d_logs = acc
    entries = begin + k * block + jnp.arange(block, dtype=jnp.int32)
    in_range = entries < end
    safe = jnp.where(in_range, entries, num_entries - 1)  # in bounds for unmasked loads
    row = r["entry_row"][n, safe]
    valid = in_range & (row >= 0)
    token = r["entry_token"][n, safe]
    weight = jnp.where(valid, r["entry_weight"][n, safe], 0)
    log_at = r["entry_log"][n, safe]
    keys = gather_rows(r["key_table"], (n,), row, cols, valid)        # [EB, C]
    logs = gather_rows(r["cum_log_decay"], (n,), row, cols, valid)
    d_pairs = gather_rows(r["d_pairs"], (n,), token, cols, valid)
    causal = _causal(token, cols, strict) & valid[:, None]
    # Acausal gaps are positive and may overflow; zero them before exp, as the forward does.
    decay = jnp.where(causal, jnp.exp(jnp.where(causal, log_at[:, None] - logs, 0)), 0)
    scaled = d_pairs * decay                                          # dP E
    d_key = weight[:, None] * scaled
    # Invalid lanes go out of bounds: masked stores never alias a valid lane's address.
    pltriton.store(r["d_entry_weight"].at[n, jnp.where(valid, entries, num_entries)],
                   jnp.sum(scaled * keys, axis=1), mask=valid)
    onehot = jnp.where(valid, row - first, -1)[None, :] == row_ids
    return (d_keys + onehot_matmul(onehot, d_key, 3),
            d_logs - onehot_matmul(onehot, d_key * keys, 3))

  zeros = jnp.zeros((rows, chunk), jnp.float32)
  d_keys, d_logs = lax.fori_loop(0, (end - begin + block - 1) // block, body, (zeros, zeros))
  r["d_key_table"][n, pl.ds(first, rows), :] = d_keys
  r["d_cum_log_decay"][n, pl.ds(first, rows), :] = d_logs


__all__ = ["IMPLS", "KernelConfig", "chunk_pair_weights", "pair_weights"]
