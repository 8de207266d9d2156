"""A few rows times several weight matrices, as one Pallas kernel (Triton on GPU).

A decode step multiplies the new token's rows x [M, K] (M = the batch, a handful) by
weight matrices of [K, N]: reading the weights is the whole cost, so the product should
stream them at HBM speed on every SM. XLA's GEMM for x [2, 2048] @ [2048, 6144] (the
attention layer's q/k/v) tiles the output in 64-column blocks, 96 programs on the H200's
132 SMs, and reads the 25 MB at 2.5 TB/s; its [2, 2048] @ [2048, 2048] output projection
splits K eight ways and reduces in a second launch (WORKSPACE.md, issue 15, session 20).

Here one launch covers every weight matrix: program p takes `block_n` columns of one
matrix (tiles never straddle two), walks K in blocks of `block_k` and accumulates
x[:, ks] @ W[ks, cols] in float32 (a tensor-core product of the rows padded to 16 in
registers: loads past M are masked, so x needs no padding in memory), and stores its
columns of the side-by-side result [M, sum N_i]. `block_n` is chosen so that the launch
has at least `min_programs` programs.

The reference is `skinny_xla.skinny_matmul`.
"""

from __future__ import annotations

import functools
from typing import NamedTuple, Sequence

import jax
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as pltriton
import jax.numpy as jnp

from pallas_kernels import platform
from pallas_kernels.blocks import check_power_of_two_fields, next_power_of_two

MAX_ROWS = 16       # rows of x the kernel takes (one tensor-core tile of rows)
_MIN_BLOCK_N = 16   # the narrowest column block a tensor-core product takes


class KernelConfig(NamedTuple):
  """Tiling of the kernel (all but min_programs powers of two)."""
  max_block_n: int = 64      # widest column block; halved (down to 16) for parallelism
  block_k: int = 128         # rows of W per step of a program's loop
  num_warps: int = 4
  num_stages: int = 3        # Triton software pipelining of the loop over K
  min_programs: int = 128    # block_n is halved until the launch has this many programs


def check_config(config: KernelConfig) -> None:
  """Raises ValueError naming the first field of `config` the kernel cannot take."""
  check_power_of_two_fields(config, ("max_block_n", "block_k", "num_warps"))
  if config.max_block_n < _MIN_BLOCK_N or config.block_k < 16:
    raise ValueError(f"KernelConfig.max_block_n and block_k must be >= 16, got "
                     f"{config.max_block_n} and {config.block_k}")
  for name in ("num_stages", "min_programs"):
    value = getattr(config, name)
    if not isinstance(value, int) or value < 1:
      raise ValueError(f"KernelConfig.{name} must be an int >= 1, got {value!r}")


def kernel_limits(*, rows: int, dtype) -> str | None:
  """Why the kernel cannot take x of `rows` rows in `dtype`, or None if it can."""
  if rows > MAX_ROWS:
    return f"x has {rows} rows; the kernel takes at most {MAX_ROWS}"
  if jnp.dtype(dtype) == jnp.float64:
    return "float64 inputs take the XLA path"
  return None


def column_block(widths: Sequence[int], config: KernelConfig) -> int:
  """Output columns per program for matrices of `widths` columns: `max_block_n`, halved
  while the launch would have fewer than `min_programs` programs (not below 16)."""
  block = config.max_block_n
  while block > _MIN_BLOCK_N and sum(-(-n // block) for n in widths) < config.min_programs:
    block //= 2
  return block


def _kernel(x_ref, *refs, tile_starts, column_offsets, block_n: int, block_k: int,
            rows_block: int, precision):
  *w_refs, out_ref = refs
  rows, depth = x_ref.shape
  program = pl.program_id(0)
  row = jnp.arange(rows_block, dtype=jnp.int32)
  row_ok = row < rows

  def columns_of(w_ref, first_tile, offset):
    width = w_ref.shape[1]
    cols = (program - first_tile) * block_n + jnp.arange(block_n, dtype=jnp.int32)
    col_ok = cols < width

    def step(i, acc):
      ks = i * block_k + jnp.arange(block_k, dtype=jnp.int32)
      k_ok = ks < depth
      xs = pltriton.load(x_ref.at[row[:, None], ks[None, :]],
                         mask=row_ok[:, None] & k_ok[None, :], other=0)
      ws = pltriton.load(w_ref.at[ks[:, None], cols[None, :]],
                         mask=k_ok[:, None] & col_ok[None, :], other=0)
      return acc + jnp.dot(xs, ws, preferred_element_type=jnp.float32, precision=precision)

    acc = jax.lax.fori_loop(0, -(-depth // block_k), step,
                            jnp.zeros((rows_block, block_n), jnp.float32))
    pltriton.store(out_ref.at[row[:, None], offset + cols[None, :]],
                   acc.astype(out_ref.dtype), mask=row_ok[:, None] & col_ok[None, :])

  for w_ref, first, end, offset in zip(w_refs, tile_starts[:-1], tile_starts[1:],
                                       column_offsets):
    pl.when((program >= first) & (program < end))(
        functools.partial(columns_of, w_ref, first, offset))


@functools.partial(jax.jit, static_argnames=("config", "interpret"))
def _skinny(x, weights, *, config, interpret):
  widths = [w.shape[1] for w in weights]
  block_n = column_block(widths, config)
  tile_starts, column_offsets = [0], [0]
  for width in widths:
    tile_starts.append(tile_starts[-1] + -(-width // block_n))
    column_offsets.append(column_offsets[-1] + width)
  # Float32 products in full precision (Triton's default for them is one TF32 pass).
  precision = (jax.lax.Precision.HIGHEST,) * 2 if x.dtype == jnp.float32 else None
  return pl.pallas_call(
      functools.partial(_kernel, tile_starts=tuple(tile_starts),
                        column_offsets=tuple(column_offsets[:-1]), block_n=block_n,
                        block_k=config.block_k,
                        rows_block=max(16, next_power_of_two(x.shape[0])),
                        precision=precision),
      out_shape=jax.ShapeDtypeStruct((x.shape[0], column_offsets[-1]), x.dtype),
      grid=(tile_starts[-1],),
      interpret=interpret,
      compiler_params=pltriton.CompilerParams(num_warps=config.num_warps,
                                             num_stages=config.num_stages),
  )(x, *weights)


def skinny_matmul(x: jax.Array, weights: Sequence[jax.Array], *,
                  config: KernelConfig | None = None,
                  interpret: bool | None = None) -> jax.Array:
  """`skinny_xla.skinny_matmul` as one kernel launch: x [M <= 16, K] times each of
  `weights` ([K, N_i], cast to x's dtype), side by side: [M, sum N_i] in x.dtype, products
  summed in float32. config: `KernelConfig()` when None (results do not depend on it);
  interpret: default unless on a GPU."""
  if x.ndim != 2:
    raise ValueError(f"x must be [M, K], got shape {x.shape}")
  if not weights:
    raise ValueError("weights must hold at least one [K, N] matrix")
  for i, w in enumerate(weights):
    if w.ndim != 2 or w.shape[0] != x.shape[1]:
      raise ValueError(f"weights[{i}] must be [K, N] with K = {x.shape[1]} (x's), got "
                       f"{w.shape}")
  reason = kernel_limits(rows=x.shape[0], dtype=x.dtype)
  if reason:
    raise ValueError(f"the skinny matmul kernel cannot take these inputs: {reason}")
  config = KernelConfig() if config is None else config
  check_config(config)
  if interpret is None:
    interpret = not platform.on_gpu()
  return _skinny(x, tuple(w.astype(x.dtype) for w in weights), config=config,
                 interpret=interpret)


__all__ = ["KernelConfig", "MAX_ROWS", "check_config", "column_block", "kernel_limits",
           "skinny_matmul"]
