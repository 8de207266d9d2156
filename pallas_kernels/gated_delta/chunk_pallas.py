"""The chunked gated delta rule as Pallas kernels (Triton on GPU; KERNELS.md 4, "GDN").

The math is `sdm_jax.ops.gated_delta.chunk` (its docstring derives it): per chunk of C tokens,
with G the cumulative log decay inside the chunk,

  A[t, i] = beta_t exp(G_t - G_i) k_t . k_i  (i < t),   X = (I + A)^-1,
  w = X diag(beta exp(G)) K,   u = X diag(beta) V,   k~_i = exp(G_C - G_i) k_i,
  transition = exp(G_C) I - K~^T w,   update = K~^T u,
  O = P (u - w S0) + diag(exp(G)) scale Q S0,   P[t, i] = exp(G_t - G_i) scale q_t . k_i (i <= t).

Forward, three launches reading q, k, v, g, beta where they lie ([B, T, H, ...],
time-major; T is padded to a multiple of C only when it is not one already):

1. `_prepare_kernel`, grid (B*H, N): A, X, transition and update of one chunk, all float32.
   X is built either on whole tiles (`diagonal_inverse="chunk"`, `_prepare_chunk_kernel`,
   the 16-bit default): A by one matmul, then X by doubling the inverted block size over
   the whole chunk (`_unit_lower_inverse_by_doubling`), about 15 matmuls of C x C x 64; or
   from 16 x 16 blocks (`"substitution"`, the float32 default): each diagonal block by
   forward substitution (15 dependent row steps, elementwise), the blocks below the
   diagonal by X_bj = -X_bb sum_{j <= m < b} A_bm X_mj. It writes X [C, C] for the output
   kernel: fewer bytes than w and u ([C, K + V]), at the price of two matmuls recomputed
   there.
2. `state_pallas.chunk_states`: the start state S0 of every chunk (one sequential launch).
3. `_output_kernel`, grid (V / BV, B*H, N): O for one chunk and one slab of BV value columns,
   written straight into o [B, T, H, V] in v's dtype.

`KernelConfig.forward_form="values"` splits the same work as flash-linear-attention's
kernels do: the preparation writes w, K~ and u = X diag(beta) V (in the inputs' dtype for
16-bit inputs) instead of the transition and update; the state pass (`_values_state_kernel`)
forms the written values U = u - w S0 of each chunk and stores them beside the start
states, S <- exp(G_C) S + K~^T U; the output kernel reads U instead of recomputing u - w S0
from X. The transitions the backward needs are written by the preparation only when the
forward will be differentiated. It is the 16-bit default (`default_config`): 10-30% faster
forward on the H200 than the transitions form, the default for float32 inputs.

Backward (with the forward's X, transitions and start states), three launches again:
`_start_gradient_kernel` (d O / d S0 of each chunk), `state_pallas.adjoint_states` (the
reverse recurrence: the gradient w.r.t. each chunk's end state), `_chunk_backward_kernel`
(d q, d k, d v, d g, d beta of each chunk, written time-major in the inputs' dtypes).
`KernelConfig.backward_form="split"` runs the last as two: `_written_gradient_kernel`
over (value slab, chunk) forms the written values U and dR = X^T dU (and dv) and stores U
and dR, and `_chunk_sums_backward_kernel` per chunk sums the slabs' terms without holding X
and P beside its [C, C] sums (the fused kernel's registers spill on the H200).
`KernelConfig.backward_operands="stored"` (the 16-bit default: 20-27% faster fwd+bwd on the
H200) runs the chunk backward's products on operands in the inputs' 16-bit dtype, as fla's
backward does.

Matmuls of the inputs (q k^T, k k^T) take the input dtype with float32 accumulation, as the
XLA twin does; every other matmul is float32: one TF32 pass on the GPU for 16-bit inputs
(what XLA's default float32 matmuls give the twin), TF32x3 (about float32) for float32
inputs (`KernelConfig.f32_dot_passes`, `default_config`); full precision in interpret
mode. Decays are exp of differences inside one chunk, masked before the exp, so strong
decays underflow to 0 and never overflow.

Autodiff: `gated_delta_rule` is a `custom_vjp`. Given a differentiable `twin` (the chunked
XLA path), its forward rule runs the twin under `jax.vjp` and keeps the twin's VJP function
as the residual: gradients cost what the twin's cost, calls that only run the forward
(evaluation, prefill) take the kernels. Without a twin, the backward kernels run."""

from __future__ import annotations

import functools
import math
from typing import Callable, NamedTuple

import jax
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as pltriton
import jax.numpy as jnp

from pallas_kernels import platform
from pallas_kernels.blocks import is_power_of_two
from pallas_kernels.gated_delta import state_pallas

MIN_DIM = state_pallas.MIN_DIM  # the smallest matmul side Triton takes
BLOCK_T = 16  # rows of the triangular inverse's blocks


class KernelConfig(NamedTuple):
  """Tiling of the launches (block widths powers of two >= 16 dividing V)."""
  block_v: int = 64          # value columns per program of the output kernel
  state_block_v: int = 32    # value columns per program of the state kernel
  prepare_block_v: int = 16  # value columns per step of the preparation kernel's update loop
  prepare_warps: int = 4
  output_warps: int = 4      # also of the backward's start-state gradient kernel
  backward_block_v: int = 32  # value columns per step of the chunk backward kernel's loop
  backward_warps: int = 8
  num_stages: int = 1        # of the chunk-local kernels
  f32_dot_passes: int = 3    # float32 matmuls of the chunk-local kernels: 3 TF32x3, 1 TF32
  diagonal_inverse: str = "substitution"  # or "chunk" (module docstring, launch 1)
  # The state kernels' (`state_pallas`) float32 matmuls, 3 or 1 as f32_dot_passes, and their
  # software pipelining of the chunk loop (each step's loads do not depend on the state).
  state_f32_dot_passes: int = 3
  state_stages: int = 1
  # How the forward hands the chunks' work to the state pass (module docstring):
  # "transitions" (the preparation writes each chunk's transition and update) or "values"
  # (it writes w and u, the state pass forms the written values u - w S0 and stores them,
  # the output kernel reads them). "values" needs diagonal_inverse="chunk"; the 16-bit
  # default (`default_config`).
  forward_form: str = "transitions"
  # The "values" form's state-pass and output products: "float32" operands (TF32 passes as
  # state_f32_dot_passes / f32_dot_passes), or "stored": operands in the dtype w, u and U
  # are stored in (bf16 for bf16 inputs: tensor cores at twice the TF32 rate; the state and
  # the scores are rounded to it for the product, sums stay float32), as fla does; the
  # 16-bit default.
  values_operands: str = "float32"
  # The chunk backward: "fused" (one kernel per chunk walks the value slabs, X and P live
  # beside its sums) or "split" (a kernel per chunk and slab forms U and dR and stores them
  # in float32, a second per chunk sums over slabs without X and P; module docstring).
  # "split" was no faster on the H200 (WORKSPACE.md, issue 16, session 18).
  backward_form: str = "fused"
  # The chunk backward's products (all but q k^T and k k^T, which take the inputs): "float32"
  # operands (TF32 passes as f32_dot_passes) or "stored", the inputs' dtype for 16-bit
  # inputs (bf16 tensor cores, as fla's backward; sums stay float32; the 16-bit default).
  backward_operands: str = "float32"


DIAGONAL_INVERSES = ("substitution", "chunk")
FORWARD_FORMS = ("transitions", "values")
OPERAND_DTYPES = ("float32", "stored")
BACKWARD_FORMS = ("fused", "split")


def default_config(value_dim: int, dtype=jnp.float32) -> KernelConfig:
  """The tiling for V = value_dim and inputs (q, k, v) of `dtype`, every block width at most
  V (the state kernel's own default, `state_pallas.default_block_v`).

  16-bit inputs: one TF32 pass per float32 matmul in every kernel (the precision XLA's
  default float32 matmuls give the chunked twin on the same inputs), the preparation on
  whole tiles, the state kernel's chunk loop pipelined over 2 stages (session 16: 0.72 /
  1.16 / 0.71 ms forward at issue 16's three shapes against 0.78 / 1.28 / 0.70 with TF32x3
  in the state kernels and 16 x 16 blocks), and the "values" forward on stored (16-bit)
  operands: on the H200 (bf16, K = 64, V = 128, C = 64; B, T, H = 2, 8192, 16 / 4, 4096, 8
  / 16, 2048, 4; fastest of 7) fwd 0.83 / 0.48 / 0.51 ms and fwd+bwd 3.13 / 1.74 / 1.58 ms,
  against 1.06 / 0.71 / 0.60 and 3.36 / 1.92 / 1.83 ms for the transitions form in the
  same run; and the chunk backward on stored operands too: fwd+bwd 2.66 / 1.49 / 1.38 ms
  against 3.30 / 1.86 / 1.89 on float32 operands, medians of 7 in one later run
  (WORKSPACE.md, issue 16, session 18). float32 inputs: TF32x3 (about float32) and forward
  substitution, the tiling Triton 3.6 compiled with the fewest spills (not timed against
  the other)."""
  if jnp.dtype(dtype).itemsize < 4:
    return KernelConfig(block_v=min(value_dim, 64),
                        state_block_v=state_pallas.default_block_v(value_dim),
                        prepare_block_v=min(value_dim, 64),
                        backward_block_v=min(value_dim, 32), f32_dot_passes=1,
                        diagonal_inverse="chunk", state_f32_dot_passes=1, state_stages=2,
                        forward_form="values", values_operands="stored",
                        backward_operands="stored")
  return KernelConfig(block_v=min(value_dim, 64),
                      state_block_v=state_pallas.default_block_v(value_dim),
                      prepare_block_v=16, backward_block_v=min(value_dim, 32))


def config_limits(config: KernelConfig, value_dim: int) -> str | None:
  """Why `config` cannot tile V = value_dim, or None if it can."""
  for name in ("block_v", "state_block_v", "prepare_block_v", "backward_block_v"):
    width = getattr(config, name)
    if not _power_of_two(width) or value_dim % width:
      return f"{name} must be a power of two >= {MIN_DIM} dividing V={value_dim}, got {width}"
  for name in ("prepare_warps", "output_warps", "backward_warps"):
    if getattr(config, name) not in (1, 2, 4, 8, 16):
      return f"{name} must be 1, 2, 4, 8 or 16, got {getattr(config, name)}"
  for name in ("f32_dot_passes", "state_f32_dot_passes"):
    reason = platform.f32_dot_passes_problem(name, getattr(config, name))
    if reason:
      return reason
  for name in ("num_stages", "state_stages"):
    if getattr(config, name) < 1:
      return f"{name} must be >= 1, got {getattr(config, name)}"
  if config.diagonal_inverse not in DIAGONAL_INVERSES:
    return (f"diagonal_inverse must be one of {DIAGONAL_INVERSES}, got "
            f"{config.diagonal_inverse!r}")
  if config.forward_form not in FORWARD_FORMS:
    return f"forward_form must be one of {FORWARD_FORMS}, got {config.forward_form!r}"
  for name in ("values_operands", "backward_operands"):
    if getattr(config, name) not in OPERAND_DTYPES:
      return f"{name} must be one of {OPERAND_DTYPES}, got {getattr(config, name)!r}"
  if config.backward_form not in BACKWARD_FORMS:
    return f"backward_form must be one of {BACKWARD_FORMS}, got {config.backward_form!r}"
  if config.forward_form == "values" and config.diagonal_inverse != "chunk":
    return (f"forward_form='values' needs diagonal_inverse='chunk', got "
            f"{config.diagonal_inverse!r}")
  return None


def _power_of_two(n: int) -> bool:
  return n >= MIN_DIM and is_power_of_two(n)


def kernel_limits(*, key_dim: int, value_dim: int, chunk_size: int, dtype) -> str | None:
  """Why the kernels cannot take these shapes (or accumulation dtype), or None if they can."""
  if jnp.dtype(dtype) != jnp.float32:
    return f"the recurrence must accumulate in float32, got {jnp.dtype(dtype).name}"
  for name, size in (("K", key_dim), ("V", value_dim), ("chunk_size", chunk_size)):
    if not _power_of_two(size):
      return f"{name} must be a power of two >= {MIN_DIM}, got {size}"
  return None


def _precision(dtype, interpret: bool, f32_passes: int):
  """Matmul precision for operands of `dtype`: tensor-core default for 16-bit inputs; for
  float32 TF32x3 (about float32) or, with f32_passes=1, one TF32 pass; full precision in
  interpret mode."""
  if jnp.dtype(dtype).itemsize < 4:
    return lax.Precision.DEFAULT
  return platform.f32_dot_precision(interpret, f32_passes)


def _dot(a, b, precision, *, transpose_a=False, transpose_b=False):
  """a @ b (a^T, b^T on request) with float32 accumulation; a, b 2-D of one dtype."""
  contract = ((0 if transpose_a else 1,), (1 if transpose_b else 0,))
  return lax.dot_general(a, b, (contract, ((), ())), precision=precision,
                         preferred_element_type=jnp.float32)


def _operand_dot(operands, interpret: bool, f32_passes: int):
  """`_dot` with both operands cast to `operands`: float32 (TF32 passes as `f32_passes`)
  or a 16-bit dtype (tensor cores at twice the TF32 rate; sums stay float32)."""
  precision = _precision(operands, interpret, f32_passes)

  def dot(a, b, **transposes):
    return _dot(a.astype(operands), b.astype(operands), precision, **transposes)
  return dot


def _iota(shape, dimension):
  return lax.broadcasted_iota(jnp.int32, shape, dimension)


def _decays(g_row, g_col, mask: str):
  """exp(G_t - G_i) at [t, i] for G_t = g_row[t], G_i = g_col[i]. mask "causal" (i <= t) or
  "strict" (i < t) zeroes the rest, masked before the exp so nothing overflows (the block
  on the chunk's diagonal); "none" keeps all (a block below it: every i < t)."""
  difference = g_row[:, None] - g_col[None, :]
  if mask == "none":
    return jnp.exp(difference)
  shape = difference.shape
  row, col = _iota(shape, 0), _iota(shape, 1)
  keep = row > col if mask == "strict" else row >= col
  return jnp.exp(jnp.where(keep, difference, -jnp.inf))


def _causal_scores(queries, keys, cumulative, scale: float, precision):
  """P [C, C]: P[t, i] = exp(G_t - G_i) scale q_t . k_i for i <= t, else 0."""
  return (scale * _decays(cumulative, cumulative, "causal")
          * _dot(queries, keys, precision, transpose_b=True))


def _invert_diagonal_blocks(blocks):
  """(I + a)^-1 for each strictly lower-triangular [16, 16] block a, by forward substitution:
  row i of X = (I + a)^-1 is e_i - sum_{j < i} a[i, j] X[j]."""
  n = BLOCK_T
  row, col = _iota((n, n), 0), _iota((n, n), 1)
  identity = (row == col).astype(jnp.float32)

  def step(i, inverses):
    new = []
    for a, x in zip(blocks, inverses):
      a_i = jnp.sum(jnp.where(row == i, a, 0.0), axis=0)  # [j] = a[i, j], zero for j >= i
      x_i = jnp.where(lax.iota(jnp.int32, n) == i, 1.0, 0.0) - jnp.sum(a_i[:, None] * x, axis=0)
      new.append(jnp.where(row == i, x_i[None, :], x))
    return tuple(new)

  return lax.fori_loop(1, n, step, tuple(identity for _ in blocks))


def _unit_lower_inverse_by_doubling(a, precision, *, base: int = 4):
  """(I + a)^-1 for a strictly lower-triangular [n, n] a (n a power of two >= base) with
  n x n matmuls only (no dependent row steps), by doubling the inverted block size:

  - within each base x base diagonal block, (I + d)^-1 = (I - d)(I + d^2) (d^4 = 0), d = a
    masked to those blocks;
  - then for s = 2 base, ..., n: with Y the inverse within the s/2-blocks and e = a masked
    to the lower-left quadrant of each s-block, I + a = (I + d)(I + Y e) and (Y e)^2 = 0,
    so the inverse within s-blocks is (I - Y e) Y.

  Entries above the diagonal stay exactly zero. A plain product (I - a)(I + a^2)(I + a^4)
  ... would take as many matmuls, but its terms grow like binomial coefficients where keys
  repeat (1.2e-4 error for a 16 x 16 block of 0.9s against 6e-10 by substitution); here no
  term is a power above a^3."""
  n = a.shape[0]
  row, col = _iota((n, n), 0), _iota((n, n), 1)
  identity = (row == col).astype(jnp.float32)
  d = jnp.where(row // base == col // base, a, 0.0)
  inverse = _dot(identity - d, identity + _dot(d, d, precision), precision)
  size = 2 * base
  while size <= n:
    lower_left = (row // size == col // size) & (row % size >= size // 2) & (
        col % size < size // 2)
    coupling = _dot(inverse, jnp.where(lower_left, a, 0.0), precision)
    inverse = inverse - _dot(coupling, inverse, precision)
    size *= 2
  return inverse


class _ChunkFactors(NamedTuple):
  """One chunk's factors on whole tiles, float32: X = (I + A)^-1 [C, C] (by doubling), w =
  X diag(beta exp G) K [C, K], K~ = diag(exp(G_C - G)) K [C, K], beta, G and G_C."""
  inverse: jax.Array
  w: jax.Array
  keys_to_end: jax.Array
  beta: jax.Array
  cumulative: jax.Array
  g_last: jax.Array


def _chunk_factors(k_ref, g_ref, beta_ref, interpret: bool, f32_passes: int) -> _ChunkFactors:
  """A by one matmul, X by `_unit_lower_inverse_by_doubling`, w by one matmul."""
  f32 = jnp.float32
  input_precision = _precision(k_ref.dtype, interpret, f32_passes)
  f32_precision = _precision(f32, interpret, f32_passes)
  keys = k_ref[...]
  beta = beta_ref[...].astype(f32)
  g = g_ref[...].astype(f32)
  cumulative = jnp.cumsum(g)
  g_last = jnp.sum(g)
  a = (beta[:, None] * _decays(cumulative, cumulative, "strict")
       * _dot(keys, keys, input_precision, transpose_b=True))
  x = _unit_lower_inverse_by_doubling(a, f32_precision)
  keys_f32 = keys.astype(f32)
  w = _dot(x, (beta * jnp.exp(cumulative))[:, None] * keys_f32, f32_precision)
  keys_to_end = jnp.exp(g_last - cumulative)[:, None] * keys_f32
  return _ChunkFactors(x, w, keys_to_end, beta, cumulative, g_last)


def _transition(factors: _ChunkFactors, precision) -> jax.Array:
  """exp(G_C) I - K~^T w [K, K]: the chunk's map of its start state to its end state."""
  key_dim = factors.w.shape[-1]
  eye = (_iota((key_dim, key_dim), 0) == _iota((key_dim, key_dim), 1)).astype(jnp.float32)
  return (jnp.exp(factors.g_last) * eye
          - _dot(factors.keys_to_end, factors.w, precision, transpose_a=True))


def _prepare_chunk_kernel(k_ref, v_ref, g_ref, beta_ref, transition_ref, update_ref,
                          inverse_ref, *, block_v: int, interpret: bool, f32_passes: int):
  """`_prepare_kernel`'s outputs with every product on whole [C, C] and [C, K] tiles
  (`diagonal_inverse="chunk"`): A by one matmul, X = (I + A)^-1 by doubling over the whole
  chunk (`_unit_lower_inverse_by_doubling`), w, the transition and each update slab by one
  matmul each; about 15 matmuls of C x C x 64 instead of about 90 of 16 x 16 blocks."""
  value_dim = v_ref.shape[-1]
  f32 = jnp.float32
  f32_precision = _precision(f32, interpret, f32_passes)
  factors = _chunk_factors(k_ref, g_ref, beta_ref, interpret, f32_passes)
  x, beta, keys_to_end = factors.inverse, factors.beta, factors.keys_to_end
  inverse_ref[...] = x
  transition_ref[...] = _transition(factors, f32_precision)

  def update_slab(slab, carry):
    cols = pl.ds(pl.multiple_of(slab * block_v, block_v), block_v)
    u = _dot(x, beta[:, None] * v_ref[:, cols].astype(f32), f32_precision)
    update_ref[:, cols] = _dot(keys_to_end, u, f32_precision, transpose_a=True)
    return carry

  lax.fori_loop(0, value_dim // block_v, update_slab, 0)


def _prepare_kernel(k_ref, v_ref, g_ref, beta_ref, transition_ref, update_ref, inverse_ref, *,
                    block_v: int, interpret: bool, f32_passes: int):
  """One chunk of one sequence x head: transition [K, K], update [K, V], X [C, C].

  k_ref [C, K], v_ref [C, V], g_ref, beta_ref [C] (inputs' dtype); outputs float32.
  """
  chunk, key_dim = k_ref.shape
  value_dim = v_ref.shape[-1]
  num_blocks = chunk // BLOCK_T
  f32 = jnp.float32
  input_precision = _precision(k_ref.dtype, interpret, f32_passes)
  f32_precision = _precision(f32, interpret, f32_passes)
  rows = [pl.ds(b * BLOCK_T, BLOCK_T) for b in range(num_blocks)]

  keys = [k_ref[r, :] for r in rows]
  betas = [beta_ref[r].astype(f32) for r in rows]
  cumulative = []  # G per block: the chunk's cumulative log decay
  offset = jnp.zeros((), f32)
  for r in rows:
    g = g_ref[r].astype(f32)
    cumulative.append(jnp.cumsum(g) + offset)
    offset = offset + jnp.sum(g)
  g_last = offset

  # A in blocks: a[b][j] = A[rows b, rows j] for j <= b.
  a = []
  for b in range(num_blocks):
    a.append([
        betas[b][:, None] * _decays(cumulative[b], cumulative[j], "strict" if j == b else "none")
        * _dot(keys[b], keys[j], input_precision, transpose_b=True)
        for j in range(b + 1)])
  diagonal_blocks = tuple(a[b][b] for b in range(num_blocks))
  diagonal = _invert_diagonal_blocks(diagonal_blocks)
  x = []  # x[b][j] = X[rows b, rows j] for j <= b
  for b in range(num_blocks):
    x.append([None] * b + [diagonal[b]])
    for j in range(b):
      inner = _dot(a[b][j], x[j][j], f32_precision)
      for m in range(j + 1, b):
        inner += _dot(a[b][m], x[m][j], f32_precision)
      x[b][j] = -_dot(diagonal[b], inner, f32_precision)

  zeros = jnp.zeros((BLOCK_T, BLOCK_T), f32)
  for b in range(num_blocks):
    for j in range(num_blocks):
      inverse_ref[rows[b], rows[j]] = x[b][j] if j <= b else zeros

  eye = (_iota((key_dim, key_dim), 0) == _iota((key_dim, key_dim), 1)).astype(f32)
  transition = jnp.exp(g_last) * eye
  keys_to_end = [jnp.exp(g_last - cumulative[b])[:, None] * keys[b].astype(f32)
                 for b in range(num_blocks)]
  scaled_keys = [(betas[j] * jnp.exp(cumulative[j]))[:, None] * keys[j].astype(f32)
                 for j in range(num_blocks)]
  for b in range(num_blocks):
    w = sum(_dot(x[b][j], scaled_keys[j], f32_precision) for j in range(b + 1))
    transition -= _dot(keys_to_end[b], w, f32_precision, transpose_a=True)
  transition_ref[...] = transition

  # update = K~^T X diag(beta) V, a slab of block_v value columns at a time: a [K, V]
  # accumulator would not fit in registers beside X.
  def update_slab(slab, carry):
    cols = pl.ds(pl.multiple_of(slab * block_v, block_v), block_v)
    scaled_values = [betas[j][:, None] * v_ref[rows[j], cols].astype(f32)
                     for j in range(num_blocks)]
    update = jnp.zeros((key_dim, block_v), f32)
    for b in range(num_blocks):
      u = sum(_dot(x[b][j], scaled_values[j], f32_precision) for j in range(b + 1))
      update += _dot(keys_to_end[b], u, f32_precision, transpose_a=True)
    update_ref[:, cols] = update
    return carry

  lax.fori_loop(0, value_dim // block_v, update_slab, 0)


def _output_kernel(q_ref, k_ref, v_ref, g_ref, beta_ref, inverse_ref, start_ref, o_ref, *,
                   scale: float, interpret: bool, f32_passes: int):
  """O of one chunk for one slab of value columns.

  q_ref, k_ref [C, K], v_ref [C, BV], g_ref, beta_ref [C] (inputs' dtype); inverse_ref X
  [C, C] and start_ref S0 [K, BV] float32; o_ref [C, BV] in v's dtype.
  """
  f32 = jnp.float32
  input_precision = _precision(k_ref.dtype, interpret, f32_passes)
  f32_precision = _precision(f32, interpret, f32_passes)
  keys = k_ref[...]
  queries = q_ref[...]
  beta = beta_ref[...].astype(f32)
  cumulative = jnp.cumsum(g_ref[...].astype(f32))
  start = start_ref[...]
  inverse = inverse_ref[...]

  w = _dot(inverse, (beta * jnp.exp(cumulative))[:, None] * keys.astype(f32), f32_precision)
  u = _dot(inverse, beta[:, None] * v_ref[...].astype(f32), f32_precision)
  written = u - _dot(w, start, f32_precision)  # the values the chunk writes, [C, BV]
  scores = _causal_scores(queries, keys, cumulative, scale, input_precision)
  queries_to_start = (scale * jnp.exp(cumulative))[:, None] * queries.astype(f32)
  o = _dot(scores, written, f32_precision) + _dot(queries_to_start, start, f32_precision)
  o_ref[...] = o.astype(o_ref.dtype)


def _prepare_values_kernel(k_ref, v_ref, g_ref, beta_ref, w_ref, keys_to_end_ref, u_ref,
                           inverse_ref, *transition_ref, block_v: int, interpret: bool,
                           f32_passes: int):
  """`forward_form="values"`, one chunk: X [C, C] float32, w and K~ [C, K] and u = X
  diag(beta) V [C, V] (in their refs' dtype), and with a transition_ref the transition
  [K, K] float32 (what the backward kernels need; a forward that will not be differentiated
  skips it). Inputs as `_prepare_kernel`'s."""
  value_dim = v_ref.shape[-1]
  f32 = jnp.float32
  f32_precision = _precision(f32, interpret, f32_passes)
  factors = _chunk_factors(k_ref, g_ref, beta_ref, interpret, f32_passes)
  inverse_ref[...] = factors.inverse
  w_ref[...] = factors.w.astype(w_ref.dtype)
  keys_to_end_ref[...] = factors.keys_to_end.astype(keys_to_end_ref.dtype)
  for ref in transition_ref:
    ref[...] = _transition(factors, f32_precision)

  def u_slab(slab, carry):
    cols = pl.ds(pl.multiple_of(slab * block_v, block_v), block_v)
    u = _dot(factors.inverse, factors.beta[:, None] * v_ref[:, cols].astype(f32),
             f32_precision)
    u_ref[:, cols] = u.astype(u_ref.dtype)
    return carry

  lax.fori_loop(0, value_dim // block_v, u_slab, 0)


def _values_state_kernel(g_ref, w_ref, keys_to_end_ref, u_ref, initial_ref, start_ref,
                         written_ref, final_ref, *, heads: int, chunk: int, num_chunks: int,
                         block_v: int, operands, interpret: bool, f32_passes: int):
  """`forward_form="values"`, grid (B*H, V // BV): walks the chunks of one sequence x head
  on one slab of BV columns with S [K, BV] on chip. Per chunk: S0 = S is stored, the
  written values U = u - w S0 [C, BV] are stored (in written_ref's dtype), and
  S <- exp(G_C) S + K~^T U (U unrounded), which is transition S + update.

  g_ref [B, T, H] (the input, T a multiple of C; only each chunk's sum G_C is used);
  w_ref, keys_to_end_ref K~ [N, B*H, C, K], u_ref [N, B*H, C, V]; initial_ref, final_ref
  [B*H, K, V] and start_ref [N, B*H, K, V] float32; written_ref [N, B*H, C, V]. The two
  products take their operands in `operands` (float32 or the stored dtype).
  """
  f32 = jnp.float32
  dot = _operand_dot(operands, interpret, f32_passes)
  bh = pl.program_id(0)  # outside the loop: interpret mode cannot read it inside one
  cols = pl.ds(pl.multiple_of(pl.program_id(1) * block_v, block_v), block_v)
  sequence, head = bh // heads, bh % heads

  def step(n, state):
    start_ref[n, bh, :, cols] = state
    tokens = pl.ds(pl.multiple_of(n * chunk, chunk), chunk)
    g_last = jnp.sum(g_ref[sequence, tokens, head].astype(f32))
    written = u_ref[n, bh, :, cols].astype(f32) - dot(w_ref[n, bh, :, :], state)
    written_ref[n, bh, :, cols] = written.astype(written_ref.dtype)
    return jnp.exp(g_last) * state + dot(keys_to_end_ref[n, bh, :, :], written,
                                         transpose_a=True)

  final_ref[bh, :, cols] = lax.fori_loop(0, num_chunks, step, initial_ref[bh, :, cols])


def _output_values_kernel(q_ref, k_ref, g_ref, written_ref, start_ref, o_ref, *, scale: float,
                          operands, interpret: bool, f32_passes: int):
  """`forward_form="values"`: O of one chunk for one slab of value columns from the written
  values the state pass stored: O = P U + diag(exp(G)) scale Q S0, both products on
  operands in `operands` (float32 or the stored dtype).

  q_ref, k_ref [C, K], g_ref [C] (inputs' dtype); written_ref U [C, BV]; start_ref S0
  [K, BV] float32; o_ref [C, BV] in v's dtype.
  """
  f32 = jnp.float32
  input_precision = _precision(k_ref.dtype, interpret, f32_passes)
  dot = _operand_dot(operands, interpret, f32_passes)
  queries = q_ref[...]
  cumulative = jnp.cumsum(g_ref[...].astype(f32))
  scores = _causal_scores(queries, k_ref[...], cumulative, scale, input_precision)
  queries_to_start = (scale * jnp.exp(cumulative))[:, None] * queries.astype(f32)
  o = dot(scores, written_ref[...]) + dot(queries_to_start, start_ref[...])
  o_ref[...] = o.astype(o_ref.dtype)


def _start_gradient_kernel(q_ref, k_ref, g_ref, beta_ref, inverse_ref, do_ref, d_start_ref,
                           *, scale: float, interpret: bool, f32_passes: int):
  """The gradient of one chunk's outputs w.r.t. its start state, for one value slab:
  d_start = (diag(exp G) scale Q)^T dO - w^T P^T dO  [K, BV] (o = P (u - w S0) + ...)."""
  f32 = jnp.float32
  input_precision = _precision(k_ref.dtype, interpret, f32_passes)
  f32_precision = _precision(f32, interpret, f32_passes)
  keys, queries = k_ref[...], q_ref[...]
  beta = beta_ref[...].astype(f32)
  cumulative = jnp.cumsum(g_ref[...].astype(f32))
  d_o = do_ref[...].astype(f32)
  w = _dot(inverse_ref[...], (beta * jnp.exp(cumulative))[:, None] * keys.astype(f32),
           f32_precision)
  scores = _causal_scores(queries, keys, cumulative, scale, input_precision)
  queries_to_start = (scale * jnp.exp(cumulative))[:, None] * queries.astype(f32)
  scores_t_d_o = _dot(scores, d_o, f32_precision, transpose_a=True)
  d_start_ref[...] = (_dot(queries_to_start, d_o, f32_precision, transpose_a=True)
                      - _dot(w, scores_t_d_o, f32_precision, transpose_a=True))


class _ChunkTerms(NamedTuple):
  """What the chunk backward's slab loop needs of one chunk, float32: G, G_C, beta,
  exp(G), exp(G_C - G) and P (scale, causal decays, q k^T)."""
  cumulative: jax.Array
  g_last: jax.Array
  beta: jax.Array
  to_start: jax.Array
  to_end: jax.Array
  scores: jax.Array


def _chunk_terms(q_ref, k_ref, g_ref, beta_ref, scale, input_precision) -> _ChunkTerms:
  f32 = jnp.float32
  cumulative = jnp.cumsum(g_ref[...].astype(f32))
  g_last = jnp.sum(g_ref[...].astype(f32))
  scores = _causal_scores(q_ref[...], k_ref[...], cumulative, scale, input_precision)
  return _ChunkTerms(cumulative, g_last, beta_ref[...].astype(f32), jnp.exp(cumulative),
                     jnp.exp(g_last - cumulative), scores)


def _keys_start_and_residual(k_ref, v_ref, terms: _ChunkTerms, start, cols, dot):
  """For one slab: K S0 and the residual R' = V - diag(exp G) K S0 (R = diag(beta) R')."""
  keys_start = dot(k_ref[...], start)
  return keys_start, v_ref[:, cols].astype(jnp.float32) - terms.to_start[:, None] * keys_start


def _written_and_its_gradient(k_ref, v_ref, inverse_ref, terms: _ChunkTerms, start, adjoint,
                              d_o, cols, dot):
  """For one slab: K S0, the residual R' = V - diag(exp G) K S0 (R = diag(beta) R'), the
  written values U = X R, and dR = X^T dU with dU = P^T dO + K~ dS1."""
  f32 = jnp.float32
  keys_to_end = terms.to_end[:, None] * k_ref[...].astype(f32)        # K~
  inverse = inverse_ref[...]
  keys_start, residual = _keys_start_and_residual(k_ref, v_ref, terms, start, cols, dot)
  written = dot(inverse, terms.beta[:, None] * residual)              # U
  d_written = dot(terms.scores, d_o, transpose_a=True) + dot(keys_to_end, adjoint)
  d_r = dot(inverse, d_written, transpose_a=True)                     # dR
  return keys_start, residual, written, d_r


def _accumulate_slab(carry, k_ref, terms: _ChunkTerms, start, adjoint, d_o, keys_start,
                     residual, written, d_r, dot):
  """The chunk backward's sums over value columns, one slab's share added to `carry`."""
  (d_scores, d_a, d_queries_to_start, d_keys, d_beta, d_cumulative, through_keys_to_end,
   start_dot_adjoint) = carry
  keys_to_end = terms.to_end[:, None] * k_ref[...].astype(jnp.float32)
  d_keys_to_end = dot(written, adjoint, transpose_b=True)
  return (d_scores + dot(d_o, written, transpose_b=True),
          d_a - dot(d_r, written, transpose_b=True),
          d_queries_to_start + dot(d_o, start, transpose_b=True),
          d_keys + terms.to_end[:, None] * d_keys_to_end
          - (terms.beta * terms.to_start)[:, None] * dot(d_r, start, transpose_b=True),
          d_beta + jnp.sum(d_r * residual, axis=1),
          d_cumulative - terms.beta * terms.to_start * jnp.sum(d_r * keys_start, axis=1),
          through_keys_to_end + jnp.sum(d_keys_to_end * keys_to_end, axis=1),
          start_dot_adjoint + jnp.sum(start * adjoint))


def _slab_sums(k_ref, num_slabs: int, slab):
  """Runs `slab(s, carry)` over the value slabs from zero sums."""
  chunk, key_dim = k_ref.shape
  f32 = jnp.float32
  square = jnp.zeros((chunk, chunk), f32)
  by_key = jnp.zeros((chunk, key_dim), f32)
  by_token = jnp.zeros((chunk,), f32)
  return lax.fori_loop(0, num_slabs, slab, (square, square, by_key, by_key, by_token,
                                            by_token, by_token, jnp.zeros((), f32)))


def _finish_chunk_backward(q_ref, k_ref, terms: _ChunkTerms, sums, dq_ref, dk_ref, dg_ref,
                           dbeta_ref, *, scale, input_precision, dot):
  """The tail of the chunk backward: from the slab sums to dq, dk, dg and dbeta, ordered so
  that each [C, C] array dies soon after it is made. Decays: P and A depend on G_t - G_i,
  Q~ on G_t, K~ on G_C - G_t, S1 on G_C."""
  (d_scores, d_a, d_queries_to_start, d_keys, d_beta, d_cumulative, through_keys_to_end,
   start_dot_adjoint) = sums
  chunk = k_ref.shape[0]
  cumulative, beta, to_start = terms.cumulative, terms.beta, terms.to_start
  keys, queries = k_ref[...], q_ref[...]
  queries_f32 = queries.astype(jnp.float32)
  # Through P = scale causal * q k^T.
  d_qk = scale * _decays(cumulative, cumulative, "causal") * d_scores
  through_scores = d_scores * terms.scores
  d_cumulative += jnp.sum(through_scores, axis=1) - jnp.sum(through_scores, axis=0)
  d_q = dot(d_qk, keys) + (scale * to_start)[:, None] * d_queries_to_start
  d_keys += dot(d_qk, queries, transpose_a=True)
  d_cumulative += jnp.sum(d_queries_to_start * (scale * to_start)[:, None] * queries_f32,
                          axis=1)
  # Through A = beta strict * k k^T (d_a is used where A is).
  strict = _decays(cumulative, cumulative, "strict")
  strict_products = strict * _dot(keys, keys, input_precision, transpose_b=True)
  d_beta += jnp.sum(strict_products * d_a, axis=1)
  through_a = beta[:, None] * d_a * strict_products
  d_cumulative += jnp.sum(through_a, axis=1) - jnp.sum(through_a, axis=0)
  d_kk = beta[:, None] * strict * d_a
  d_keys += dot(d_kk, keys) + dot(d_kk, keys, transpose_a=True)
  d_cumulative -= through_keys_to_end
  d_last = jnp.exp(terms.g_last) * start_dot_adjoint + jnp.sum(through_keys_to_end)
  # g_i enters every G_t with t >= i, and G_C.
  row, col = _iota((chunk, chunk), 0), _iota((chunk, chunk), 1)
  d_g = jnp.sum(jnp.where(col >= row, d_cumulative[None, :], 0.0), axis=1) + d_last
  dq_ref[...] = d_q.astype(dq_ref.dtype)
  dk_ref[...] = d_keys.astype(dk_ref.dtype)
  dg_ref[...] = d_g.astype(dg_ref.dtype)
  dbeta_ref[...] = d_beta.astype(dbeta_ref.dtype)


def _backward_setup(q_ref, k_ref, g_ref, beta_ref, scale, operands, interpret, f32_passes):
  """What every chunk-backward kernel starts from: the precision of the inputs' products,
  the `_operand_dot` of the others, and the chunk's `_ChunkTerms`."""
  input_precision = _precision(k_ref.dtype, interpret, f32_passes)
  terms = _chunk_terms(q_ref, k_ref, g_ref, beta_ref, scale, input_precision)
  return input_precision, _operand_dot(operands, interpret, f32_passes), terms


def _chunk_backward_kernel(q_ref, k_ref, v_ref, g_ref, beta_ref, inverse_ref, start_ref,
                           do_ref, adjoint_ref, dq_ref, dk_ref, dv_ref, dg_ref, dbeta_ref, *,
                           scale: float, block_v: int, operands, interpret: bool,
                           f32_passes: int):
  """Gradients w.r.t. q, k, v, g, beta of one chunk, given dO and the adjoint dS1 of its end
  state (S1 = exp(G_C) S0 + K~^T U).

  With R = diag(beta) (V - diag(exp G) K S0) and U = X R the written values:
    dU = P^T dO + K~ dS1,  dR = X^T dU,  dP = dO U^T,  dA = -dR U^T,
  then through P, A, Q~ = diag(exp G) scale Q, K~ = diag(exp(G_C - G)) K and R to the
  inputs, and dg_i = sum_{t >= i} dG_t. Value columns are walked in slabs of block_v: every
  term is a sum over columns, so the [C, BV] intermediates stay small.
  q_ref, k_ref [C, K], v_ref, do_ref [C, V], g_ref, beta_ref [C] (inputs' dtype);
  inverse_ref X [C, C], start_ref S0 and adjoint_ref dS1 [K, V] float32. Every product
  but k k^T and q k^T takes its operands in `operands` (float32 or the inputs' dtype).
  """
  value_dim = v_ref.shape[-1]
  # Registers are the limit: the column loop keeps only P and the accumulators live; X and
  # k are reloaded in each step (from cache), and what only the tail needs is computed
  # after the loop from fresh loads.
  input_precision, dot, terms = _backward_setup(q_ref, k_ref, g_ref, beta_ref, scale,
                                                operands, interpret, f32_passes)

  def slab(s, carry):
    cols = pl.ds(pl.multiple_of(s * block_v, block_v), block_v)
    start, adjoint = start_ref[:, cols], adjoint_ref[:, cols]
    d_o = do_ref[:, cols].astype(jnp.float32)
    keys_start, residual, written, d_r = _written_and_its_gradient(
        k_ref, v_ref, inverse_ref, terms, start, adjoint, d_o, cols, dot)
    dv_ref[:, cols] = (terms.beta[:, None] * d_r).astype(dv_ref.dtype)
    return _accumulate_slab(carry, k_ref, terms, start, adjoint, d_o, keys_start, residual,
                            written, d_r, dot)

  sums = _slab_sums(k_ref, value_dim // block_v, slab)
  _finish_chunk_backward(q_ref, k_ref, terms, sums, dq_ref, dk_ref, dg_ref, dbeta_ref,
                         scale=scale, input_precision=input_precision, dot=dot)


def _written_gradient_kernel(q_ref, k_ref, v_ref, g_ref, beta_ref, inverse_ref, start_ref,
                             do_ref, adjoint_ref, dv_ref, written_ref, d_r_ref, *,
                             scale: float, operands, interpret: bool, f32_passes: int):
  """`backward_form="split"`, first half, grid (V / BV, B*H, N): for one chunk and one slab
  of value columns, the written values U = X R and dR = X^T (P^T dO + K~ dS1) (stored
  float32 for the second half) and dv = diag(beta) dR. Refs as `_chunk_backward_kernel`'s,
  v_ref, do_ref, start_ref, adjoint_ref one slab wide; written_ref, d_r_ref [C, BV]."""
  _, dot, terms = _backward_setup(q_ref, k_ref, g_ref, beta_ref, scale, operands, interpret,
                                  f32_passes)
  _, _, written, d_r = _written_and_its_gradient(
      k_ref, v_ref, inverse_ref, terms, start_ref[...], adjoint_ref[...],
      do_ref[...].astype(jnp.float32), slice(None), dot)
  written_ref[...] = written
  d_r_ref[...] = d_r
  dv_ref[...] = (terms.beta[:, None] * d_r).astype(dv_ref.dtype)


def _chunk_sums_backward_kernel(q_ref, k_ref, v_ref, g_ref, beta_ref, start_ref, do_ref,
                                adjoint_ref, written_ref, d_r_ref, dq_ref, dk_ref, dg_ref,
                                dbeta_ref, *, scale: float, block_v: int, operands,
                                interpret: bool, f32_passes: int):
  """`backward_form="split"`, second half, grid (B*H, N): `_chunk_backward_kernel`'s sums
  over value slabs and its tail, with U and dR read from the first half instead of
  computed, so the slab loop holds neither X nor P. Refs as `_chunk_backward_kernel`'s
  (no X, no dv), plus written_ref, d_r_ref [C, V] float32."""
  value_dim = v_ref.shape[-1]
  f32 = jnp.float32
  input_precision, dot, terms = _backward_setup(q_ref, k_ref, g_ref, beta_ref, scale,
                                                operands, interpret, f32_passes)

  def slab(s, carry):
    cols = pl.ds(pl.multiple_of(s * block_v, block_v), block_v)
    start, adjoint = start_ref[:, cols], adjoint_ref[:, cols]
    keys_start, residual = _keys_start_and_residual(k_ref, v_ref, terms, start, cols, dot)
    return _accumulate_slab(carry, k_ref, terms, start, adjoint, do_ref[:, cols].astype(f32),
                            keys_start, residual, written_ref[:, cols], d_r_ref[:, cols],
                            dot)

  sums = _slab_sums(k_ref, value_dim // block_v, slab)
  _finish_chunk_backward(q_ref, k_ref, terms, sums, dq_ref, dk_ref, dg_ref, dbeta_ref,
                         scale=scale, input_precision=input_precision, dot=dot)


class _Shape(NamedTuple):
  batch: int
  heads: int
  num_chunks: int
  chunk: int
  key_dim: int
  value_dim: int

  @property
  def batch_heads(self) -> int:
    return self.batch * self.heads


def _time_major(shape: _Shape, width: int | None, index):
  """BlockSpec of one chunk of one (sequence, head) of a [B, T, H, width] array ([B, T, H]
  for width None), read in place; index(*grid ids) -> (bh, chunk, column block)."""
  def block(*ids):
    bh, n, column = index(*ids)
    return (bh // shape.heads, n, bh % shape.heads) + (() if width is None else (column,))
  squeezed = pl.squeezed
  tail = () if width is None else (width,)
  return pl.BlockSpec((squeezed, shape.chunk, squeezed, *tail), block)


def _per_chunk(tail, index):
  """BlockSpec of one chunk's [rows, columns] block of an [N, B*H, rows, *] array."""
  def block(*ids):
    bh, n, column = index(*ids)
    return n, bh, 0, column
  return pl.BlockSpec((pl.squeezed, pl.squeezed, *tail), block)


# Grid ids -> (bh, chunk, column block): grid (B*H, N), and grid (V / BV, B*H, N) for a
# block of all columns or of the program's slab.
def _chunk_grid(bh, n):
  return bh, n, 0


def _chunk_grid_of_slab(slab, bh, n):
  del slab
  return bh, n, 0


def _slab_grid(slab, bh, n):
  return bh, n, slab


def _call(kernel, grid, in_specs, out_specs, out_shape, warps: int,
          config: KernelConfig, interpret: bool, **params):
  return pl.pallas_call(
      functools.partial(kernel, interpret=interpret, f32_passes=config.f32_dot_passes,
                        **params), grid=grid,
      in_specs=in_specs, out_specs=out_specs, out_shape=out_shape, interpret=interpret,
      compiler_params=pltriton.CompilerParams(num_warps=warps, num_stages=config.num_stages))


def _pad_time(arrays, seq_len: int, padded_len: int):
  """Pads [B, T, ...] arrays to padded_len tokens with zeros (k = 0, g = 0, beta = 0 tokens
  leave the state unchanged; zero cotangents add nothing)."""
  if padded_len == seq_len:
    return arrays
  return [jnp.pad(x, [(0, 0), (0, padded_len - seq_len)] + [(0, 0)] * (x.ndim - 2))
          for x in arrays]


def _shape_of(q, v, chunk_size) -> _Shape:
  batch, seq_len, heads, key_dim = q.shape
  return _Shape(batch, heads, math.ceil(seq_len / chunk_size), chunk_size, key_dim,
                v.shape[-1])


def _forward(q, k, v, g, beta, initial_state, *, scale, chunk_size, config, interpret,
             residuals: bool = True):
  """(o, final state) and the residuals of the Pallas backward (X, transition, start
  states; without `residuals` the "values" form leaves the transition None), on inputs
  padded to whole chunks."""
  if config.forward_form == "values":
    return _forward_by_values(q, k, v, g, beta, initial_state, scale=scale,
                              chunk_size=chunk_size, config=config, interpret=interpret,
                              with_transition=residuals)
  shape = _shape_of(q, v, chunk_size)
  n, bh, c, kd, vd = (shape.num_chunks, shape.batch_heads, shape.chunk, shape.key_dim,
                      shape.value_dim)
  f32 = jnp.float32
  prepare = _prepare_chunk_kernel if config.diagonal_inverse == "chunk" else _prepare_kernel
  transition, update, inverse = _call(
      prepare, (bh, n),
      [_time_major(shape, kd, _chunk_grid), _time_major(shape, vd, _chunk_grid),
       _time_major(shape, None, _chunk_grid), _time_major(shape, None, _chunk_grid)],
      [_per_chunk((kd, kd), _chunk_grid), _per_chunk((kd, vd), _chunk_grid),
       _per_chunk((c, c), _chunk_grid)],
      [jax.ShapeDtypeStruct((n, bh, kd, kd), f32), jax.ShapeDtypeStruct((n, bh, kd, vd), f32),
       jax.ShapeDtypeStruct((n, bh, c, c), f32)],
      config.prepare_warps, config, interpret, block_v=config.prepare_block_v)(k, v, g, beta)
  start_states, final_state = state_pallas.chunk_states(
      transition, update, initial_state.reshape(bh, kd, vd).astype(f32),
      block_v=config.state_block_v, interpret=interpret,
      f32_passes=config.state_f32_dot_passes, num_stages=config.state_stages)
  block_v = config.block_v
  o = _call(
      _output_kernel, (vd // block_v, bh, n),
      [_time_major(shape, kd, _chunk_grid_of_slab), _time_major(shape, kd, _chunk_grid_of_slab),
       _time_major(shape, block_v, _slab_grid), _time_major(shape, None, _chunk_grid_of_slab),
       _time_major(shape, None, _chunk_grid_of_slab),
       _per_chunk((c, c), _chunk_grid_of_slab), _per_chunk((kd, block_v), _slab_grid)],
      _time_major(shape, block_v, _slab_grid),
      jax.ShapeDtypeStruct((shape.batch, n * c, shape.heads, vd), v.dtype),
      config.output_warps, config, interpret, scale=scale,
  )(q, k, v, g, beta, inverse, start_states)
  final_state = final_state.reshape(shape.batch, shape.heads, kd, vd)
  return (o, final_state), (inverse, transition, start_states)


def _stored_dtype(dtype):
  """The dtype of the "values" form's w, u and written values: the inputs' for 16-bit
  inputs (the bytes the state pass moves halve; sums stay float32), else float32."""
  return jnp.dtype(dtype) if jnp.dtype(dtype).itemsize < 4 else jnp.dtype(jnp.float32)


def _operand_dtype(choice: str, inputs_dtype):
  """The dtype of a kernel's matmul operands for `values_operands` / `backward_operands`
  = `choice`: "stored" (`_stored_dtype` of the inputs) or "float32"."""
  return _stored_dtype(inputs_dtype) if choice == "stored" else jnp.dtype(jnp.float32)


def _forward_by_values(q, k, v, g, beta, initial_state, *, scale, chunk_size, config,
                       interpret, with_transition: bool):
  """`_forward` for `forward_form="values"`: preparation (X, w, u), the state pass storing
  the start states and the written values, the output from those."""
  shape = _shape_of(q, v, chunk_size)
  n, bh, c, kd, vd = (shape.num_chunks, shape.batch_heads, shape.chunk, shape.key_dim,
                      shape.value_dim)
  f32 = jnp.float32
  stored = _stored_dtype(jnp.result_type(q, k, v))
  operands = _operand_dtype(config.values_operands, stored)
  out_specs = [_per_chunk((c, kd), _chunk_grid), _per_chunk((c, kd), _chunk_grid),
               _per_chunk((c, vd), _chunk_grid), _per_chunk((c, c), _chunk_grid)]
  out_shapes = [jax.ShapeDtypeStruct((n, bh, c, kd), stored),
                jax.ShapeDtypeStruct((n, bh, c, kd), stored),
                jax.ShapeDtypeStruct((n, bh, c, vd), stored),
                jax.ShapeDtypeStruct((n, bh, c, c), f32)]
  if with_transition:
    out_specs.append(_per_chunk((kd, kd), _chunk_grid))
    out_shapes.append(jax.ShapeDtypeStruct((n, bh, kd, kd), f32))
  w, keys_to_end, u, inverse, *transition = _call(
      _prepare_values_kernel, (bh, n),
      [_time_major(shape, kd, _chunk_grid), _time_major(shape, vd, _chunk_grid),
       _time_major(shape, None, _chunk_grid), _time_major(shape, None, _chunk_grid)],
      out_specs, out_shapes, config.prepare_warps, config, interpret,
      block_v=config.prepare_block_v)(k, v, g, beta)
  state_block_v = config.state_block_v
  start_states, written, final_state = pl.pallas_call(
      functools.partial(_values_state_kernel, heads=shape.heads, chunk=c, num_chunks=n,
                        block_v=state_block_v, operands=operands, interpret=interpret,
                        f32_passes=config.state_f32_dot_passes),
      out_shape=(jax.ShapeDtypeStruct((n, bh, kd, vd), f32),
                 jax.ShapeDtypeStruct((n, bh, c, vd), stored),
                 jax.ShapeDtypeStruct((bh, kd, vd), f32)),
      grid=(bh, vd // state_block_v), interpret=interpret,
      compiler_params=pltriton.CompilerParams(num_warps=4, num_stages=config.state_stages),
  )(g, w, keys_to_end, u, initial_state.reshape(bh, kd, vd).astype(f32))
  block_v = config.block_v
  o = _call(
      _output_values_kernel, (vd // block_v, bh, n),
      [_time_major(shape, kd, _chunk_grid_of_slab), _time_major(shape, kd, _chunk_grid_of_slab),
       _time_major(shape, None, _chunk_grid_of_slab), _per_chunk((c, block_v), _slab_grid),
       _per_chunk((kd, block_v), _slab_grid)],
      _time_major(shape, block_v, _slab_grid),
      jax.ShapeDtypeStruct((shape.batch, n * c, shape.heads, vd), v.dtype),
      config.output_warps, config, interpret, scale=scale, operands=operands,
  )(q, k, g, written, start_states)
  final_state = final_state.reshape(shape.batch, shape.heads, kd, vd)
  return (o, final_state), (inverse, transition[0] if transition else None, start_states)


def _backward(q, k, v, g, beta, residuals, d_o, d_final, *, scale, chunk_size, config,
              interpret):
  """Gradients w.r.t. (q, k, v, g, beta, initial state), inputs padded to whole chunks."""
  inverse, transition, start_states = residuals
  shape = _shape_of(q, v, chunk_size)
  n, bh, c, kd, vd = (shape.num_chunks, shape.batch_heads, shape.chunk, shape.key_dim,
                      shape.value_dim)
  f32 = jnp.float32
  block_v = config.block_v
  d_start = _call(
      _start_gradient_kernel, (vd // block_v, bh, n),
      [_time_major(shape, kd, _chunk_grid_of_slab), _time_major(shape, kd, _chunk_grid_of_slab),
       _time_major(shape, None, _chunk_grid_of_slab),
       _time_major(shape, None, _chunk_grid_of_slab),
       _per_chunk((c, c), _chunk_grid_of_slab), _time_major(shape, block_v, _slab_grid)],
      _per_chunk((kd, block_v), _slab_grid), jax.ShapeDtypeStruct((n, bh, kd, vd), f32),
      config.output_warps, config, interpret, scale=scale,
  )(q, k, g, beta, inverse, d_o)
  adjoints, d_initial = state_pallas.adjoint_states(
      transition, d_start, d_final.reshape(bh, kd, vd).astype(f32),
      block_v=config.state_block_v, interpret=interpret,
      f32_passes=config.state_f32_dot_passes, num_stages=config.state_stages)
  like = lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype)  # noqa: E731
  operands = _operand_dtype(config.backward_operands, jnp.result_type(q, k, v))
  if config.backward_form == "split":
    slab = config.backward_block_v
    d_v, written, d_r = _call(
        _written_gradient_kernel, (vd // slab, bh, n),
        [_time_major(shape, kd, _chunk_grid_of_slab),
         _time_major(shape, kd, _chunk_grid_of_slab), _time_major(shape, slab, _slab_grid),
         _time_major(shape, None, _chunk_grid_of_slab),
         _time_major(shape, None, _chunk_grid_of_slab),
         _per_chunk((c, c), _chunk_grid_of_slab), _per_chunk((kd, slab), _slab_grid),
         _time_major(shape, slab, _slab_grid), _per_chunk((kd, slab), _slab_grid)],
        [_time_major(shape, slab, _slab_grid), _per_chunk((c, slab), _slab_grid),
         _per_chunk((c, slab), _slab_grid)],
        [like(v), jax.ShapeDtypeStruct((n, bh, c, vd), f32),
         jax.ShapeDtypeStruct((n, bh, c, vd), f32)],
        config.output_warps, config, interpret, scale=scale, operands=operands,
    )(q, k, v, g, beta, inverse, start_states, d_o, adjoints)
    d_q, d_k, d_g, d_beta = _call(
        _chunk_sums_backward_kernel, (bh, n),
        [_time_major(shape, kd, _chunk_grid), _time_major(shape, kd, _chunk_grid),
         _time_major(shape, vd, _chunk_grid), _time_major(shape, None, _chunk_grid),
         _time_major(shape, None, _chunk_grid), _per_chunk((kd, vd), _chunk_grid),
         _time_major(shape, vd, _chunk_grid), _per_chunk((kd, vd), _chunk_grid),
         _per_chunk((c, vd), _chunk_grid), _per_chunk((c, vd), _chunk_grid)],
        [_time_major(shape, kd, _chunk_grid), _time_major(shape, kd, _chunk_grid),
         _time_major(shape, None, _chunk_grid), _time_major(shape, None, _chunk_grid)],
        [like(q), like(k), like(g), like(beta)],
        config.backward_warps, config, interpret, scale=scale, block_v=slab,
        operands=operands,
    )(q, k, v, g, beta, start_states, d_o, adjoints, written, d_r)
    return d_q, d_k, d_v, d_g, d_beta, d_initial.reshape(d_final.shape)
  d_q, d_k, d_v, d_g, d_beta = _call(
      _chunk_backward_kernel, (bh, n),
      [_time_major(shape, kd, _chunk_grid), _time_major(shape, kd, _chunk_grid),
       _time_major(shape, vd, _chunk_grid), _time_major(shape, None, _chunk_grid),
       _time_major(shape, None, _chunk_grid), _per_chunk((c, c), _chunk_grid),
       _per_chunk((kd, vd), _chunk_grid), _time_major(shape, vd, _chunk_grid),
       _per_chunk((kd, vd), _chunk_grid)],
      [_time_major(shape, kd, _chunk_grid), _time_major(shape, kd, _chunk_grid),
       _time_major(shape, vd, _chunk_grid), _time_major(shape, None, _chunk_grid),
       _time_major(shape, None, _chunk_grid)],
      [like(q), like(k), like(v), like(g), like(beta)],
      config.backward_warps, config, interpret, scale=scale,
      block_v=config.backward_block_v, operands=operands,
  )(q, k, v, g, beta, inverse, start_states, d_o, adjoints)
  return d_q, d_k, d_v, d_g, d_beta, d_initial.reshape(d_final.shape)


def forward(q, k, v, g, beta, initial_state, *, scale: float, chunk_size: int,
            config: KernelConfig | None = None, interpret: bool | None = None):
  """(o [B, T, H, V] in v's dtype, final state [B, H, K, V] float32): the kernels, no autodiff.

  q, k [B, T, H, K], v [B, T, H, V], g, beta [B, T, H] (any float dtypes accumulating in
  float32); initial_state [B, H, K, V] float32. Shapes must pass `kernel_limits`.
  """
  seq_len = q.shape[1]
  config = config or default_config(v.shape[-1], jnp.result_type(q, k, v))
  interpret = (not platform.on_gpu()) if interpret is None else interpret
  padded = _pad_time((q, k, v, g, beta), seq_len, _shape_of(q, v, chunk_size).num_chunks
                     * chunk_size)
  (o, final_state), _ = _forward(*padded, initial_state, scale=scale, chunk_size=chunk_size,
                                 config=config, interpret=interpret, residuals=False)
  return o[:, :seq_len], final_state


Twin = Callable[..., tuple[jax.Array, jax.Array]]


@functools.partial(jax.custom_vjp, nondiff_argnums=(6, 7, 8, 9, 10))
def _gated_delta_rule(q, k, v, g, beta, initial_state, scale, chunk_size, twin, config,
                      interpret):
  return forward(q, k, v, g, beta, initial_state, scale=scale, chunk_size=chunk_size,
                 config=config, interpret=interpret)


def _gated_delta_rule_fwd(q, k, v, g, beta, initial_state, scale, chunk_size, twin, config,
                          interpret):
  if twin is not None:
    # The twin runs the forward too: its VJP function (a pytree of the twin's residual
    # arrays) is all the backward needs.
    return jax.vjp(twin, q, k, v, g, beta, initial_state)
  seq_len = q.shape[1]
  padded = _pad_time((q, k, v, g, beta), seq_len,
                     _shape_of(q, v, chunk_size).num_chunks * chunk_size)
  (o, final_state), residuals = _forward(*padded, initial_state, scale=scale,
                                         chunk_size=chunk_size, config=config,
                                         interpret=interpret)
  return (o[:, :seq_len], final_state), (padded, residuals)


def _gated_delta_rule_bwd(scale, chunk_size, twin, config, interpret, residuals, cotangents):
  if twin is not None:
    return residuals(cotangents)  # the twin's VJP function
  padded, kernel_residuals = residuals
  d_o, d_final = cotangents
  seq_len = d_o.shape[1]
  (d_o,) = _pad_time((d_o,), seq_len, padded[0].shape[1])
  *d_inputs, d_initial = _backward(*padded, kernel_residuals, d_o, d_final, scale=scale,
                                   chunk_size=chunk_size, config=config, interpret=interpret)
  return (*(x[:, :seq_len] for x in d_inputs), d_initial)


_gated_delta_rule.defvjp(_gated_delta_rule_fwd, _gated_delta_rule_bwd)


def gated_delta_rule(q, k, v, g, beta, initial_state, *, scale: float, chunk_size: int,
                     twin: Twin | None = None, config: KernelConfig | None = None,
                     interpret: bool | None = None) -> tuple[jax.Array, jax.Array]:
  """The chunked gated delta rule by the kernels, differentiable.

  Args:
    q, k: [B, T, H, K]; v: [B, T, H, V]; g (log decay), beta: [B, T, H]; initial_state:
      [B, H, K, V] float32. Any T (padded to a multiple of chunk_size inside).
    scale: multiplies q (a Python float).
    chunk_size: C, a power of two >= 16, as K and V (`kernel_limits`).
    twin: None: gradients by the backward kernels (the forward keeps X, the transitions and
      the start states for them). Else twin(q, k, v, g, beta, initial_state) -> (o, final
      state), the same function in differentiable JAX: under differentiation it runs
      instead of the kernels and gradients are its gradients.
    config: tiling (`KernelConfig`); default `default_config(V, dtype of q, k, v)`.
    interpret: run the kernels in interpret mode; default: unless on a GPU.

  Returns:
    (o [B, T, H, V] in v's dtype, final state [B, H, K, V] float32).

  Raises:
    ValueError: naming the limit when the kernels cannot take the inputs.
  """
  key_dim, value_dim = q.shape[-1], v.shape[-1]
  reason = kernel_limits(key_dim=key_dim, value_dim=value_dim, chunk_size=chunk_size,
                         dtype=jnp.result_type(q, k, v, g, beta, initial_state, jnp.float32))
  if reason:
    raise ValueError(f"the Pallas gated delta kernels cannot run: {reason}")
  config = config or default_config(value_dim, jnp.result_type(q, k, v))
  reason = config_limits(config, value_dim)
  if reason:
    raise ValueError(f"config cannot tile these inputs: {reason}")
  if interpret is None:
    interpret = not platform.on_gpu()
  return _gated_delta_rule(q, k, v, g, beta, initial_state, float(scale), chunk_size, twin,
                           config, interpret)


__all__ = ["KernelConfig", "config_limits", "default_config", "forward", "gated_delta_rule",
           "kernel_limits"]
