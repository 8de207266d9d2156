"""Phase 2 of the chunked sparse delta rule as Pallas TPU (Mosaic) kernels.

The contract of `scan_xla.scan_chunks` (the twin; same math, see there and DESIGN.md 3.4).
Per chunk the table-dependent work is a gather of rows, a few small matmuls and a scatter
of rows. On a TPU the matmuls belong to the MXU and the rows to the DMA engines, so the
chunk's sparse sums are written as dense matrices over the chunk's *row list* and built in
XLA, outside the kernels (they depend only on the plan):

  row list   rows = [slots (U, padded to Uw) ; read-only slots (the reads the chunk does
             not write, unique, padded to Q)], P = Uw + Q rows; ids >= N are padding
  write_mat  [C, Uw]  Wm[u, pos(I_u[i])] = write_coef[u, i]        (shared form)
  update_mat [C, Uw]  Um[u, pos(I_u[i])] = update_coef[u, i]
  read_mat   [C, P]   Rm[t, pos(J_t[j])] += read_coef[t, j]
  decay      [Uw, 1]  exp(L_C(s)) of each written slot

With G [P, Dv] the chunk's starting rows (zero for padding):
  r0 = Wm G[:Uw],  y = V - r0,  delta = S y (per slot: delta = V),
  out = Rm G + QK delta,  new rows G[:Uw] <- decay * G[:Uw] + Um^T delta.

Forward: one `pallas_call`, grid (B*H, Dv / BD, chunks); the chunk axis is sequential
("arbitrary") and each (sequence x head, column slab) program walks the chunks in order
over its own columns of its own table, so programs never touch the same bytes (no atomics,
no cross-program synchronisation; the race detector of interpret mode checks this across
simulated cores). Per step: the chunk's row ids arrive in SMEM (a pipelined SMEM block), the
table stays in HBM (`memory_space=pl.ANY`, aliased to the output), rows are copied by
`pltpu.make_async_copy` with `dma_window` copies in flight, the matmuls run on the VMEM
slab, and the new rows are copied back into the aliased table. The chunk's starting written
rows go out as the snapshot [chunks, Uw, Dv] for the backward.

Backward: the same grid with the chunks in reverse. Per step: the written rows are the
snapshot, the read-only rows are copied from the table (at this point it holds their value
at the chunk's start: this chunk does not write them, later chunks were undone), the
snapshot is copied back into the table (undoing the chunk's writes) and the cotangent
rows are copied from d_table; then the chunk's vector-Jacobian product as matmuls, and the
start-of-chunk cotangent rows go back into d_table (rows are unique in the list, so this
is a plain store: no accumulation across copies). The gradients of the dense matrices are
sums over all columns: each slab writes its partial sum, XLA adds them, and XLA's own
autodiff of the matrix construction maps them back to the plan's coefficients. d_solve
and d_qk are formed in XLA from the stacked y, delta, d_delta and d_out.

Limits: a float32 table (a bf16 row is a partial (16, 128) tile) and Dv a multiple of 128
(rows are whole lanes); the dense matrices cost O(T C (2W + R)) floats per sequence and
head, the order of phase 1's pair tensors. Written to the subset of the API that JAX
0.10.2 and 0.11.2 both accept; never compiled on a TPU here (none was available): it is
tested in TPU interpret mode and by lowering it for TPU on a CPU (README.md).
"""

from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple

import jax
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
import jax.numpy as jnp

from pallas_kernels import platform
from pallas_kernels.blocks import is_power_of_two
from pallas_kernels.sparse_delta.plan import ChunkCoefs, ChunkIds, ChunkPlan

LANES = 128
# VMEM the kernels may use (blocks double-buffered, scratch rows): below the VMEM of the
# TPU generations since v4 (unverified on hardware).
VMEM_BUDGET_BYTES = 32 * 2**20
MAX_CHUNK = 256
_PRECISION = lax.Precision.HIGHEST


class TpuKernelConfig(NamedTuple):
  """Tiling of the TPU phase-2 kernels."""
  block_cols: int = LANES  # BD: value columns per program, a multiple of 128
  dma_window: int = 8      # row copies in flight per stream of copies


def _round_up(n: int, multiple: int) -> int:
  return -(-n // multiple) * multiple


class _Dims(NamedTuple):
  batch_heads: int
  num_chunks: int
  chunk: int
  written_rows: int  # Uw: the written slots' part of the row list
  rows: int          # P: the whole row list (written, then read-only)
  num_slots: int
  value_dim: int
  shared: bool

  def vmem_bytes(self, config: TpuKernelConfig) -> int:
    """An upper estimate of the backward's VMEM (the larger kernel): double-buffered blocks
    (a [X, 1] block takes X x 128 lanes) and two [P, BD] row buffers, float32."""
    c, uw, p, bd = self.chunk, self.written_rows, self.rows, config.block_cols
    wide_c = max(c, LANES)
    blocks = (4 * c * uw + 2 * c * p + 2 * uw * LANES + 2 * c * wide_c + 5 * c * bd
              + uw * bd)
    return 4 * (2 * blocks + 2 * p * bd)


def kernel_limits(*, chunk: int, value_dim: int, table_dtype, plan_dtype) -> str | None:
  """Why the TPU kernels cannot take these shapes, or None if they can (the VMEM check,
  which needs W and R, is made by `scan_chunks`)."""
  if jnp.dtype(table_dtype) != jnp.float32:
    return (f"the TPU kernels take a float32 table (a bf16 row is a partial (16, 128) "
            f"tile), got {jnp.dtype(table_dtype).name}")
  if jnp.dtype(plan_dtype) != jnp.float32:
    return f"inputs must accumulate in float32, got {jnp.dtype(plan_dtype).name} (float64?)"
  if value_dim % LANES:
    return f"the TPU kernels need Dv a multiple of {LANES} (whole lanes), got {value_dim}"
  if not is_power_of_two(chunk) or not 16 <= chunk <= MAX_CHUNK:
    return f"the chunk length must be a power of two in [16, {MAX_CHUNK}], got {chunk}"
  return None


# ------------------------------------------------------------------- layout (XLA, per chunk)


class _Operands(NamedTuple):
  """The kernels' differentiable inputs, stacked [B*H, n_chunks, ...] (see module doc)."""
  write_mat: jax.Array | None  # [.., C, Uw] shared form only
  update_mat: jax.Array        # [.., C, Uw]
  read_mat: jax.Array          # [.., C, P]
  decay: jax.Array             # [.., Uw, 1]
  solve: jax.Array | None      # [.., C, C] shared form only
  qk: jax.Array                # [.., C, C]
  values: jax.Array            # [.., C, Dv]


def _chunk_layout(ids: ChunkIds, coefs: ChunkCoefs, *, num_slots: int, written_rows: int,
                  read_only_rows: int) -> tuple[jax.Array, jax.Array, _Operands]:
  """One chunk's row list [P], its counts of real rows [2] (written, read-only; each part
  sorted, padding last) and dense matrices; differentiable in `coefs`."""
  slots = ids.slots
  num_unique = slots.shape[-1]
  chunk, num_reads = ids.read_idx.shape
  reads = ids.read_idx.reshape(-1)
  written_pos = jnp.searchsorted(slots, reads).astype(jnp.int32)
  is_written = slots[jnp.minimum(written_pos, num_unique - 1)] == reads
  read_only = jnp.unique(jnp.where(is_written, num_slots, reads), size=chunk * num_reads,
                         fill_value=num_slots).astype(jnp.int32)
  read_only_pos = jnp.searchsorted(read_only, reads).astype(jnp.int32)
  read_row = jnp.where(is_written, written_pos, written_rows + read_only_pos)

  def padded(x, size):
    return jnp.concatenate([x, jnp.full((size - x.shape[0],), num_slots, jnp.int32)])

  rows = jnp.concatenate([padded(slots.astype(jnp.int32), written_rows),
                          padded(read_only, read_only_rows)])
  counts = jnp.stack([jnp.sum(slots < num_slots), jnp.sum(read_only < num_slots)])
  token = jnp.arange(chunk)[:, None]
  dtype = coefs.values.dtype

  def written_matrix(coef):
    return jnp.zeros((chunk, written_rows), dtype).at[token, ids.write_pos].add(coef)

  read_mat = jnp.zeros((chunk, written_rows + read_only_rows), dtype).at[
      token, read_row.reshape(chunk, num_reads)].add(coefs.read_coef)
  decay = jnp.zeros((written_rows,), dtype).at[:num_unique].set(coefs.end_decay)
  operands = _Operands(
      write_mat=None if coefs.write_coef is None else written_matrix(coefs.write_coef),
      update_mat=written_matrix(coefs.update_coef),
      read_mat=read_mat,
      decay=decay[:, None],
      solve=coefs.solve,
      qk=coefs.qk,
      values=coefs.values,
  )
  # A unit axis: the last two dims of a block must be whole (or (8, 128)-aligned), SMEM too.
  return rows[None], counts[None].astype(jnp.int32), operands


# ------------------------------------------------------------------------------ row copies


class _Copies(NamedTuple):
  """A stream of row copies: the first `count` rows (the real ones: padding sorts last)
  of the part of the row list that starts at row `first`."""
  first: int
  count: jax.Array
  copy: Callable[[jax.Array, jax.Array], Any]  # (slot, row) -> its DMA descriptor


def _run_copies(streams: list[_Copies], rows_ref, *, window: int):
  """Runs every stream's copies, keeping `window` copies of each stream in flight (each
  stream signals its own semaphore), and returns when all are done. A wait needs only the
  semaphore and the byte count, so it reads no slot id."""
  length = streams[0].count
  for stream in streams[1:]:
    length = jnp.maximum(length, stream.count)

  def advance(stream, i):
    @pl.when(i < stream.count)
    def _():
      row = stream.first + i
      stream.copy(rows_ref[0, row], row).start()

    @pl.when((i >= window) & (i - window < stream.count))
    def _():
      stream.copy(0, stream.first).wait()

  def step(i, carry):
    for stream in streams:
      advance(stream, i)
    return carry

  lax.fori_loop(0, length + window, step, 0)


def _dot(a, b, contract=((1,), (0,))):
  return lax.dot_general(a, b, (contract, ((), ())), precision=_PRECISION,
                         preferred_element_type=jnp.float32)


# ---------------------------------------------------------------------------------- kernels


def _forward_kernel(*refs, names, dims: _Dims, config: TpuKernelConfig):
  """grid (B*H, slabs, chunks): chunk c of one table's column slab, in place."""
  r = dict(zip(names, refs))
  bh, block = pl.program_id(0), config.block_cols
  cols = pl.ds(pl.multiple_of(pl.program_id(1) * block, block), block)
  rows_ref, table, buf, sems = r["rows"], r["table_out"], r["row_buf"], r["sems"]
  written, num_written, num_read_only = dims.written_rows, r["counts"][0, 0], r["counts"][0, 1]

  def table_row(slot):
    return table.at[bh, pl.ds(slot, 1), cols]

  def gather(first, count, sem):
    return _Copies(first, count, lambda slot, row: pltpu.make_async_copy(
        table_row(slot), buf.at[pl.ds(row, 1)], sems.at[sem]))

  buf[...] = jnp.zeros(buf.shape, buf.dtype)  # padding rows stay zero
  _run_copies([gather(0, num_written, 0), gather(written, num_read_only, 1)], rows_ref,
              window=config.dma_window)

  start_rows = buf[...]                      # [P, BD] the chunk's starting rows
  start_written = start_rows[:written]
  r["snapshot"][...] = start_written
  if dims.shared:
    y = r["values"][...] - _dot(r["write_mat"][...], start_written)
    delta = _dot(r["solve"][...], y)
    r["y"][...] = y
    r["delta"][...] = delta
  else:
    delta = r["values"][...]
  r["out"][...] = _dot(r["read_mat"][...], start_rows) + _dot(r["qk"][...], delta)
  buf[pl.ds(0, written), :] = (r["decay"][...] * start_written
                               + _dot(r["update_mat"][...], delta, ((0,), (0,))))

  scatter = _Copies(0, num_written, lambda slot, row: pltpu.make_async_copy(
      buf.at[pl.ds(row, 1)], table_row(slot), sems.at[2]))
  _run_copies([scatter], rows_ref, window=config.dma_window)


def _backward_kernel(*refs, names, dims: _Dims, config: TpuKernelConfig):
  """grid (B*H, slabs, chunks in reverse): undo chunk c's writes to the slab and map the
  slab's cotangent from the chunk's end to its start."""
  r = dict(zip(names, refs))
  bh, block = pl.program_id(0), config.block_cols
  cols = pl.ds(pl.multiple_of(pl.program_id(1) * block, block), block)
  rows_ref, table, d_table = r["rows"], r["table_out"], r["d_table_out"]
  buf, d_buf, sems, snapshot = r["row_buf"], r["d_row_buf"], r["sems"], r["snapshot"]
  written, num_written, num_read_only = dims.written_rows, r["counts"][0, 0], r["counts"][0, 1]

  def row_of(ref, slot):
    return ref.at[bh, pl.ds(slot, 1), cols]

  def cotangent_rows(first, count, sem):  # d_table -> d_buf
    return _Copies(first, count, lambda slot, row: pltpu.make_async_copy(
        row_of(d_table, slot), d_buf.at[pl.ds(row, 1)], sems.at[sem]))

  def store_cotangent_rows(first, count, sem):  # d_buf -> d_table
    return _Copies(first, count, lambda slot, row: pltpu.make_async_copy(
        d_buf.at[pl.ds(row, 1)], row_of(d_table, slot), sems.at[sem]))

  buf[...] = jnp.zeros(buf.shape, buf.dtype)  # padding rows stay zero
  d_buf[...] = jnp.zeros(d_buf.shape, d_buf.dtype)
  buf[pl.ds(0, written), :] = snapshot[...]
  read_only = _Copies(written, num_read_only, lambda slot, row: pltpu.make_async_copy(
      row_of(table, slot), buf.at[pl.ds(row, 1)], sems.at[0]))
  # (From the scratch copy: a DMA from a block with squeezed dims fails Mosaic's verifier.)
  restore = _Copies(0, num_written, lambda slot, row: pltpu.make_async_copy(
      buf.at[pl.ds(row, 1)], row_of(table, slot), sems.at[1]))
  _run_copies([read_only, restore, cotangent_rows(0, num_written, 2),
               cotangent_rows(written, num_read_only, 3)], rows_ref, window=config.dma_window)

  start_rows = buf[...]    # [P, BD]
  d_end = d_buf[...]       # [P, BD] cotangent of the rows at the chunk's end
  start_written, d_end_written = start_rows[:written], d_end[:written]
  d_out, delta = r["d_out"][...], r["delta"][...]
  d_delta = (_dot(r["qk"][...], d_out, ((0,), (0,)))
             + _dot(r["update_mat"][...], d_end_written))
  r["d_update_mat"][...] = _dot(delta, d_end_written, ((1,), (1,)))
  r["d_read_mat"][...] = _dot(d_out, start_rows, ((1,), (1,)))
  r["d_decay"][...] = jnp.sum(d_end_written * start_written, axis=1, keepdims=True)
  d_start = d_end + _dot(r["read_mat"][...], d_out, ((0,), (0,)))
  d_start_written = d_start[:written] + (r["decay"][...] - 1) * d_end_written
  if dims.shared:
    d_y = _dot(r["solve"][...], d_delta, ((0,), (0,)))
    r["d_delta"][...] = d_delta
    r["d_values"][...] = d_y
    r["d_write_mat"][...] = _dot(-d_y, start_written, ((1,), (1,)))
    d_start_written = d_start_written - _dot(r["write_mat"][...], d_y, ((0,), (0,)))
  else:
    r["d_values"][...] = d_delta
  d_buf[...] = d_start
  d_buf[pl.ds(0, written), :] = d_start_written

  # The semaphores of the first copies are free again: all of those were waited for.
  _run_copies([store_cotangent_rows(0, num_written, 0),
               store_cotangent_rows(written, num_read_only, 1)], rows_ref,
              window=config.dma_window)


# ------------------------------------------------------------------------------ host side


def _specs(dims: _Dims, config: TpuKernelConfig, reverse: bool):
  """BlockSpec makers for stacked [B*H, n, ...] arrays, chunk axis walked in `reverse`."""
  block, last = config.block_cols, dims.num_chunks - 1
  chunk_of = (lambda c: last - c) if reverse else (lambda c: c)  # noqa: E731

  def whole(*shape, memory_space=None):  # the chunk's whole [*shape] block
    kw = {} if memory_space is None else dict(memory_space=memory_space)
    return pl.BlockSpec((None, None, *shape),
                        lambda bh, s, c: (bh, chunk_of(c), *(0,) * len(shape)), **kw)

  def slab(rows):  # [rows, Dv] arrays: this program's columns
    return pl.BlockSpec((None, None, rows, block), lambda bh, s, c: (bh, chunk_of(c), 0, s))

  def partial_sum(*shape):  # [B*H, n, slabs, *shape]: this slab's part of a column sum
    return pl.BlockSpec((None, None, None, *shape),
                        lambda bh, s, c: (bh, chunk_of(c), s, *(0,) * len(shape)))

  return whole, slab, partial_sum


def _call(kernel, dims: _Dims, config: TpuKernelConfig, interpret, *, inputs: dict,
          in_specs: dict, outputs: dict, out_specs: dict, aliases: tuple, scratch: dict):
  """pallas_call over grid (B*H, slabs, chunks) with named operands; `aliases` name inputs
  updated in place (their outputs are `<name>_out` in the kernel)."""
  in_names, out_names = list(inputs), list(outputs)
  names = (in_names + [n + "_out" if n in aliases else n for n in out_names]
           + list(scratch))
  body = functools.partial(kernel, names=names, dims=dims, config=config)
  results = pl.pallas_call(
      body,
      grid_spec=pl.GridSpec(
          grid=(dims.batch_heads, dims.value_dim // config.block_cols, dims.num_chunks),
          in_specs=[in_specs[n] for n in in_names],
          out_specs=[out_specs[n] for n in out_names],
          scratch_shapes=list(scratch.values())),
      out_shape=[jax.ShapeDtypeStruct(outputs[n].shape, outputs[n].dtype) for n in out_names],
      input_output_aliases={in_names.index(n): out_names.index(n) for n in aliases},
      compiler_params=pltpu.CompilerParams(
          dimension_semantics=("parallel", "parallel", "arbitrary"),
          vmem_limit_bytes=VMEM_BUDGET_BYTES),
      interpret=interpret,
  )(*inputs.values())
  return dict(zip(out_names, results))


def _forward(table, operands: _Operands, rows, counts, dims: _Dims, config: TpuKernelConfig,
             interpret):
  whole, slab, _ = _specs(dims, config, reverse=False)
  hbm = pl.BlockSpec(memory_space=pl.ANY)
  c, uw, p = dims.chunk, dims.written_rows, dims.rows
  inputs = dict(rows=rows, counts=counts, update_mat=operands.update_mat,
                read_mat=operands.read_mat, decay=operands.decay, qk=operands.qk,
                values=operands.values, table=table)
  in_specs = dict(rows=whole(1, p, memory_space=pltpu.SMEM),
                  counts=whole(1, 2, memory_space=pltpu.SMEM), update_mat=whole(c, uw),
                  read_mat=whole(c, p), decay=whole(uw, 1), qk=whole(c, c), values=slab(c),
                  table=hbm)
  stacked = lambda rows: jax.ShapeDtypeStruct(  # noqa: E731
      (dims.batch_heads, dims.num_chunks, rows, dims.value_dim), jnp.float32)
  outputs = dict(table=table, out=stacked(c), snapshot=stacked(uw))
  out_specs = dict(table=hbm, out=slab(c), snapshot=slab(uw))
  if dims.shared:
    inputs.update(write_mat=operands.write_mat, solve=operands.solve)
    in_specs.update(write_mat=whole(c, uw), solve=whole(c, c))
    outputs.update(y=stacked(c), delta=stacked(c))
    out_specs.update(y=slab(c), delta=slab(c))
  scratch = dict(row_buf=pltpu.VMEM((p, config.block_cols), jnp.float32),
                 sems=pltpu.SemaphoreType.DMA((3,)))
  return _call(_forward_kernel, dims, config, interpret, inputs=inputs, in_specs=in_specs,
               outputs=outputs, out_specs=out_specs, aliases=("table",), scratch=scratch)


def _backward(table, d_table, operands: _Operands, rows, counts, saved: dict, d_out,
              dims: _Dims, config: TpuKernelConfig, interpret):
  whole, slab, partial_sum = _specs(dims, config, reverse=True)
  hbm = pl.BlockSpec(memory_space=pl.ANY)
  c, uw, p = dims.chunk, dims.written_rows, dims.rows
  delta = saved["delta"] if dims.shared else operands.values
  inputs = dict(rows=rows, counts=counts, update_mat=operands.update_mat,
                read_mat=operands.read_mat, decay=operands.decay, qk=operands.qk, delta=delta,
                snapshot=saved["snapshot"], d_out=d_out, table=table, d_table=d_table)
  in_specs = dict(rows=whole(1, p, memory_space=pltpu.SMEM),
                  counts=whole(1, 2, memory_space=pltpu.SMEM), update_mat=whole(c, uw),
                  read_mat=whole(c, p), decay=whole(uw, 1), qk=whole(c, c), delta=slab(c),
                  snapshot=slab(uw), d_out=slab(c), table=hbm, d_table=hbm)
  lead = (dims.batch_heads, dims.num_chunks)
  slabs = dims.value_dim // config.block_cols
  f32 = lambda *shape: jax.ShapeDtypeStruct(shape, jnp.float32)  # noqa: E731
  outputs = dict(table=table, d_table=d_table, d_values=f32(*lead, c, dims.value_dim),
                 d_update_mat=f32(*lead, slabs, c, uw), d_read_mat=f32(*lead, slabs, c, p),
                 d_decay=f32(*lead, slabs, uw, 1))
  out_specs = dict(table=hbm, d_table=hbm, d_values=slab(c), d_update_mat=partial_sum(c, uw),
                   d_read_mat=partial_sum(c, p), d_decay=partial_sum(uw, 1))
  if dims.shared:
    inputs.update(write_mat=operands.write_mat, solve=operands.solve)
    in_specs.update(write_mat=whole(c, uw), solve=whole(c, c))
    outputs.update(d_delta=f32(*lead, c, dims.value_dim), d_write_mat=f32(*lead, slabs, c, uw))
    out_specs.update(d_delta=slab(c), d_write_mat=partial_sum(c, uw))
  scratch = dict(row_buf=pltpu.VMEM((p, config.block_cols), jnp.float32),
                 d_row_buf=pltpu.VMEM((p, config.block_cols), jnp.float32),
                 sems=pltpu.SemaphoreType.DMA((4,)))
  return _call(_backward_kernel, dims, config, interpret, inputs=inputs, in_specs=in_specs,
               outputs=outputs, out_specs=out_specs, aliases=("table", "d_table"),
               scratch=scratch)


def _dims_of(table_shape, operands: _Operands, rows) -> _Dims:
  batch_heads, num_slots, value_dim = table_shape
  _, num_chunks, chunk, written_rows = operands.update_mat.shape
  return _Dims(batch_heads=batch_heads, num_chunks=num_chunks, chunk=chunk,
               written_rows=written_rows, rows=rows.shape[-1], num_slots=num_slots,
               value_dim=value_dim, shared=operands.solve is not None)


@functools.partial(jax.custom_vjp, nondiff_argnums=(4, 5))
def _apply(table, operands: _Operands, rows, counts, config: TpuKernelConfig, interpret):
  """table [B*H, N, Dv] float32 -> (out [B*H, n, C, Dv], final table)."""
  return _apply_fwd(table, operands, rows, counts, config, interpret)[0]


def _apply_fwd(table, operands, rows, counts, config, interpret):
  dims = _dims_of(table.shape, operands, rows)
  results = _forward(table, operands, rows, counts, dims, config, interpret)
  saved = {n: results[n] for n in ("snapshot", "y", "delta") if n in results}
  residuals = (results["table"], operands, rows, counts, saved)
  return (results["out"], results["table"]), residuals


def _apply_bwd(config, interpret, residuals, cotangents):
  final, operands, rows, counts, saved = residuals
  d_out, d_final = cotangents
  dims = _dims_of(final.shape, operands, rows)
  results = _backward(final, d_final.astype(jnp.float32), operands, rows, counts, saved,
                      d_out.astype(jnp.float32), dims, config, interpret)
  contract = lambda a, b: jnp.einsum("xntd,xnud->xntu", a, b,  # noqa: E731
                                     precision=_PRECISION)
  slab_sum = lambda name: jnp.sum(results[name], axis=2)  # noqa: E731
  delta = saved["delta"] if dims.shared else operands.values
  d_operands = _Operands(
      write_mat=slab_sum("d_write_mat") if dims.shared else None,
      update_mat=slab_sum("d_update_mat"),
      read_mat=slab_sum("d_read_mat"),
      decay=slab_sum("d_decay"),
      solve=contract(results["d_delta"], saved["y"]) if dims.shared else None,
      qk=contract(d_out.astype(jnp.float32), delta),
      values=results["d_values"],
  )
  return results["d_table"], d_operands, None, None


_apply.defvjp(_apply_fwd, _apply_bwd)


def scan_chunks(memory: jax.Array, plan: ChunkPlan, *, error: str,
                config: TpuKernelConfig | None = None,
                interpret: bool | pltpu.InterpretParams | None = None, out_dtype=None
                ) -> tuple[jax.Array, jax.Array]:
  """Phase 2 by the TPU kernels; the contract of `scan_xla.scan_chunks`.

  Args:
    memory: [B, H, N, Dv] (one table per sequence) or [H, N, Dv] (shared initial table,
      its gradient summed over B), float32, Dv a multiple of 128.
    plan: a float32 plan with leading axes [B, H, n_chunks] (C a power of two in [16, 256]).
    error: "shared" or "per_slot"; must match the plan (the shared form has a solve).
    config: tiling; `TpuKernelConfig()` (128 columns per program) when None.
    interpret: False compiles for TPU; True or `pltpu.InterpretParams(...)` runs TPU
      interpret mode; default: compiled on a TPU, interpret mode elsewhere.
    out_dtype: out's dtype (default float32).

  Returns:
    out [B, H, n_chunks, C, Dv] in out_dtype and the final memory [B, H, N, Dv] float32.
  """
  if (error == "shared") != (plan.coefs.solve is not None):
    raise ValueError(f"error={error!r} does not match the plan")
  batch, heads, num_chunks, chunk, num_writes = plan.ids.write_pos.shape
  num_slots, value_dim = memory.shape[-2:]
  reason = kernel_limits(chunk=chunk, value_dim=value_dim, table_dtype=memory.dtype,
                         plan_dtype=plan.coefs.values.dtype)
  if reason:
    raise ValueError(f"the Pallas TPU sparse delta kernels cannot run: {reason}")
  config = TpuKernelConfig() if config is None else config
  if config.block_cols % LANES or value_dim % config.block_cols:
    raise ValueError(f"block_cols must be a multiple of {LANES} dividing Dv = {value_dim}, "
                     f"got {config.block_cols}")
  if interpret is None:
    interpret = platform.tpu_interpret()
  num_reads = plan.ids.read_idx.shape[-1]
  written_rows = _round_up(plan.ids.slots.shape[-1], LANES)
  read_only_rows = _round_up(chunk * num_reads, LANES)
  dims = _Dims(batch_heads=batch * heads, num_chunks=num_chunks, chunk=chunk,
               written_rows=written_rows, rows=written_rows + read_only_rows,
               num_slots=num_slots, value_dim=value_dim, shared=error == "shared")
  if dims.vmem_bytes(config) > VMEM_BUDGET_BYTES:
    raise ValueError(
        f"the TPU kernels need about {dims.vmem_bytes(config) / 2**20:.1f} MiB of VMEM for "
        f"C = {chunk}, W = {num_writes}, R = {num_reads}, block_cols = {config.block_cols}; "
        f"the budget is {VMEM_BUDGET_BYTES / 2**20:.0f} MiB: use a shorter chunk")

  layout = functools.partial(_chunk_layout, num_slots=num_slots, written_rows=written_rows,
                             read_only_rows=read_only_rows)
  rows, counts, operands = jax.vmap(jax.vmap(jax.vmap(layout)))(plan.ids, plan.coefs)
  flat = lambda x: None if x is None else x.reshape(batch * heads, *x.shape[2:])  # noqa: E731
  operands = _Operands(*(flat(x) for x in operands))
  table = jnp.broadcast_to(memory, (batch, heads, num_slots, value_dim))
  out, final = _apply(table.reshape(batch * heads, num_slots, value_dim), operands,
                      flat(rows), flat(counts), config, interpret)
  return (out.reshape(batch, heads, *out.shape[1:]).astype(out_dtype or out.dtype),
          final.reshape(batch, heads, num_slots, value_dim))


__all__ = ["LANES", "MAX_CHUNK", "TpuKernelConfig", "VMEM_BUDGET_BYTES", "kernel_limits",
           "scan_chunks"]
