"""The chunk-state recurrence of the chunked gated delta rule as Pallas kernels (Triton on
GPU; KERNELS.md 4, "GDN").

  S_0 = initial_state,   S_{n+1} = transition_n S_n + update_n     (transition [K, K],
                                                                   update, S [K, V])

One launch walks all chunks: the grid is (sequence x head, value-column slab) and each
program keeps its [K, BV] slab of the state on chip, loading one transition and one update
slab per chunk. Columns of the state never mix (the transition acts on K), so the programs
are independent. The backward (a `custom_vjp`) walks the chunks in reverse with the adjoint
L_N = d_final, L_n = transition_n^T L_{n+1} + d_start_n:

  d update_n = L_{n+1},   d transition_n = L_{n+1} S_n^T,   d initial_state = L_0,

each program writing its slab's part of d transition_n, summed over slabs afterwards.
Matmuls are float32: TF32x3 on the GPU by default, one TF32 pass with `f32_passes=1` (what
XLA's default float32 matmuls give the twin), full precision in interpret mode. The twin is
`state_xla.chunk_states`.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as pltriton
import jax.numpy as jnp

from pallas_kernels import platform
from pallas_kernels.blocks import is_power_of_two

MIN_DIM = 16  # the smallest matmul side Triton takes


def kernel_limits(*, key_dim: int, value_dim: int, dtype) -> str | None:
  """Why the kernels cannot take these shapes, or None if they can."""
  if jnp.dtype(dtype) != jnp.float32:
    return f"the recurrence must accumulate in float32, got {jnp.dtype(dtype).name}"
  if not is_power_of_two(key_dim) or key_dim < MIN_DIM:
    return f"K must be a power of two >= {MIN_DIM}, got {key_dim}"
  if value_dim % MIN_DIM:
    return f"V must be a multiple of {MIN_DIM}, got {value_dim}"
  return None


def default_block_v(value_dim: int) -> int:
  """Value columns per program: 32 where V allows (more programs for the SMs), else 16."""
  return 32 if value_dim % 32 == 0 else MIN_DIM


def _dot(a, b, contract, interpret, f32_passes):
  """float32 a . b contracting dims `contract` ((a_dims,), (b_dims,))."""
  precision = platform.f32_dot_precision(interpret, f32_passes)
  return lax.dot_general(a, b, (contract, ((), ())), precision=precision,
                         preferred_element_type=jnp.float32)


def _slab(block_v):
  """(slab index, column slice) of this program."""
  slab = pl.program_id(1)
  return slab, pl.ds(pl.multiple_of(slab * block_v, block_v), block_v)


def _forward_kernel(transition_ref, update_ref, initial_ref, start_ref, final_ref, *,
                    num_chunks: int, block_v: int, interpret: bool, f32_passes: int):
  """grid (B*H, V // BV): S <- transition_n S + update_n for n = 0..N-1 on one slab."""
  bh = pl.program_id(0)
  _, cols = _slab(block_v)

  def chunk(n, state):
    start_ref[n, bh, :, cols] = state
    new = _dot(transition_ref[n, bh, :, :], state, ((1,), (0,)), interpret, f32_passes)
    return new + update_ref[n, bh, :, cols]

  final_ref[bh, :, cols] = lax.fori_loop(0, num_chunks, chunk, initial_ref[bh, :, cols])


def _backward_kernel(*refs, num_chunks: int, block_v: int, interpret: bool,
                     f32_passes: int, with_transition: bool):
  """grid (B*H, V // BV): the adjoint recurrence, chunks in reverse, on one slab.

  refs: transition, [start states,] d_start, d_final -> d_update (= L_{n+1} of chunk n),
  [d_transition,] d_initial; the bracketed ones only `with_transition`.
  """
  if with_transition:
    (transition_ref, start_ref, d_start_ref, d_final_ref, d_update_ref, d_transition_ref,
     d_initial_ref) = refs
  else:
    transition_ref, d_start_ref, d_final_ref, d_update_ref, d_initial_ref = refs
  bh = pl.program_id(0)
  slab, cols = _slab(block_v)

  def chunk(i, adjoint):  # adjoint = L_{n+1}
    n = num_chunks - 1 - i
    d_update_ref[n, bh, :, cols] = adjoint
    if with_transition:
      d_transition_ref[n, bh, slab, :, :] = _dot(adjoint, start_ref[n, bh, :, cols],
                                                 ((1,), (1,)), interpret, f32_passes)
    back = _dot(transition_ref[n, bh, :, :], adjoint, ((0,), (0,)), interpret, f32_passes)
    return back + d_start_ref[n, bh, :, cols]

  d_initial_ref[bh, :, cols] = lax.fori_loop(0, num_chunks, chunk, d_final_ref[bh, :, cols])


class Tuning(NamedTuple):
  """How the kernels run (not what they compute, up to rounding)."""
  block_v: int            # value columns per program
  f32_passes: int = 3     # 3: TF32x3 (about float32); 1: one TF32 pass
  num_stages: int = 1     # Triton software pipelining of the chunk loop (1: none)


def _launch(kernel, inputs, out_shapes, grid, interpret, tuning: Tuning, **params):
  return pl.pallas_call(
      functools.partial(kernel, interpret=interpret, block_v=tuning.block_v,
                        f32_passes=tuning.f32_passes, **params),
      out_shape=out_shapes, grid=grid, interpret=interpret,
      compiler_params=pltriton.CompilerParams(num_warps=4, num_stages=tuning.num_stages),
  )(*inputs)


def _run_forward(transition, update, initial_state, tuning, interpret):
  num_chunks, batch_heads, _, value_dim = update.shape
  f32 = jnp.float32
  return _launch(
      _forward_kernel, (transition, update, initial_state),
      (jax.ShapeDtypeStruct(update.shape, f32), jax.ShapeDtypeStruct(initial_state.shape, f32)),
      (batch_heads, value_dim // tuning.block_v), interpret, tuning, num_chunks=num_chunks)


@functools.partial(jax.custom_vjp, nondiff_argnums=(3, 4))
def _states(transition, update, initial_state, tuning, interpret):
  return _run_forward(transition, update, initial_state, tuning, interpret)


def _states_fwd(transition, update, initial_state, tuning, interpret):
  start_states, final_state = _run_forward(transition, update, initial_state, tuning,
                                           interpret)
  return (start_states, final_state), (transition, start_states)


def _states_bwd(tuning, interpret, residuals, cotangents):
  transition, start_states = residuals
  d_start, d_final = cotangents
  num_chunks, batch_heads, key_dim, value_dim = start_states.shape
  slabs = value_dim // tuning.block_v
  f32 = jnp.float32
  d_update, d_transition, d_initial = _launch(
      _backward_kernel, (transition, start_states, d_start.astype(f32), d_final.astype(f32)),
      (jax.ShapeDtypeStruct(start_states.shape, f32),
       jax.ShapeDtypeStruct((num_chunks, batch_heads, slabs, key_dim, key_dim), f32),
       jax.ShapeDtypeStruct(d_final.shape, f32)),
      (batch_heads, slabs), interpret, tuning, num_chunks=num_chunks, with_transition=True)
  return jnp.sum(d_transition, axis=2), d_update, d_initial


_states.defvjp(_states_fwd, _states_bwd)


def _check_tuning(value_dim: int, block_v: int, f32_passes: int, num_stages: int) -> Tuning:
  if not is_power_of_two(block_v) or block_v < MIN_DIM or value_dim % block_v:
    raise ValueError(f"block_v must be a power of two >= {MIN_DIM} dividing V={value_dim}, "
                     f"got {block_v}")
  reason = platform.f32_dot_passes_problem("f32_passes", f32_passes)
  if reason:
    raise ValueError(reason)
  if num_stages < 1:
    raise ValueError(f"num_stages must be >= 1, got {num_stages}")
  return Tuning(block_v, f32_passes, num_stages)


def adjoint_states(transition: jax.Array, d_start: jax.Array, d_final: jax.Array, *,
                   block_v: int, interpret: bool, f32_passes: int = 3,
                   num_stages: int = 1) -> tuple[jax.Array, jax.Array]:
  """The adjoint recurrence alone: (L_{n+1} for n = 0..N-1 [N, BH, K, V], L_0 [BH, K, V]).

  L_N = d_final, L_n = transition_n^T L_{n+1} + d_start_n: the gradient w.r.t. each chunk's
  end state and w.r.t. the initial state, for backward passes that differentiate the
  chunk-local math themselves. transition [N, BH, K, K], d_start [N, BH, K, V], d_final
  [BH, K, V], float32; shapes as `chunk_states` checks them; f32_passes, num_stages as
  there.
  """
  num_chunks, batch_heads, key_dim, value_dim = d_start.shape
  tuning = _check_tuning(value_dim, block_v, f32_passes, num_stages)
  f32 = jnp.float32
  return _launch(
      _backward_kernel, (transition, d_start.astype(f32), d_final.astype(f32)),
      (jax.ShapeDtypeStruct(d_start.shape, f32), jax.ShapeDtypeStruct(d_final.shape, f32)),
      (batch_heads, value_dim // block_v), interpret, tuning, num_chunks=num_chunks,
      with_transition=False)


def chunk_states(transition: jax.Array, update: jax.Array, initial_state: jax.Array, *,
                 block_v: int | None = None, interpret: bool | None = None,
                 f32_passes: int = 3, num_stages: int = 1) -> tuple[jax.Array, jax.Array]:
  """([S_0 .. S_{N-1}] [N, ..., K, V], S_N [..., K, V]); the contract of
  `state_xla.chunk_states`.

  Args:
    transition: [N, ..., K, K] float32; update: [N, ..., K, V] float32; initial_state:
      [..., K, V] float32 (K a power of two >= 16, V a multiple of 16).
    block_v: value columns per program (a power of two >= 16 dividing V); default
      `default_block_v(V)`.
    interpret: run in interpret mode; default: unless on a GPU.
    f32_passes: tensor-core passes per float32 matmul on the GPU: 3 (TF32x3, about
      float32) or 1 (one TF32 pass, as XLA's default float32 matmuls).
    num_stages: Triton software pipelining of the chunk loop (1: none).

  Raises:
    ValueError: naming the limit when the kernels cannot take the inputs.
  """
  num_chunks, *lead, key_dim, value_dim = update.shape
  if transition.shape != (num_chunks, *lead, key_dim, key_dim):
    raise ValueError(f"transition must be [N, ..., K, K] = {(num_chunks, *lead, key_dim, key_dim)},"
                     f" got {transition.shape}")
  if initial_state.shape != (*lead, key_dim, value_dim):
    raise ValueError(f"initial_state must be [..., K, V] = {(*lead, key_dim, value_dim)}, got "
                     f"{initial_state.shape}")
  dtype = jnp.result_type(transition, update, initial_state)
  reason = kernel_limits(key_dim=key_dim, value_dim=value_dim, dtype=dtype)
  if reason:
    raise ValueError(f"the Pallas gated delta state kernel cannot run: {reason}")
  block_v = default_block_v(value_dim) if block_v is None else block_v
  tuning = _check_tuning(value_dim, block_v, f32_passes, num_stages)
  if interpret is None:
    interpret = not platform.on_gpu()
  batch_heads = math.prod(lead)
  flat = lambda x, *tail: x.reshape(num_chunks, batch_heads, *tail)  # noqa: E731
  start_states, final_state = _states(
      flat(transition, key_dim, key_dim), flat(update, key_dim, value_dim),
      initial_state.reshape(batch_heads, key_dim, value_dim), tuning, interpret)
  return (start_states.reshape(update.shape),
          final_state.reshape(initial_state.shape))


__all__ = ["MIN_DIM", "adjoint_states", "chunk_states", "default_block_v", "kernel_limits"]
