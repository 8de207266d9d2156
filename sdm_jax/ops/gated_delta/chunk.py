"""The gated delta rule in chunks (WY / UT form): batched matmuls, then a short scan over chunks.

Within a chunk of C tokens starting from state S0, with G_t the cumulative log decay from the
chunk start (G_t = g_1 + ... + g_t), unrolling S_t = exp(g_t) S_{t-1} + k_t u_t^T gives the
written values u_t = beta_t (v_t - exp(g_t) S_{t-1}^T k_t) as the solution of

  (I + A) U = diag(beta) V - diag(beta exp(G)) K S0,
  A[t, i] = beta_t exp(G_t - G_i) k_t . k_i   for i < t (strictly lower triangular),

so U = u - w S0 with u = (I + A)^-1 diag(beta) V and w = (I + A)^-1 diag(beta exp(G)) K.
Then, with P[t, i] = exp(G_t - G_i) scale q_t . k_i for i <= t and k~_i = exp(G_C - G_i) k_i:

  O      = P u + (diag(exp(G)) scale Q - P w) S0
  S_next = (exp(G_C) I - K~^T w) S0 + K~^T u  =  transition S0 + update.

Everything but S0 is state-free, so it is computed for all chunks at once; the sequential
pass over chunks only does S <- transition S + update (one [K, K] x [K, V] matmul; a
`lax.scan` in `pallas_kernels.gated_delta.state_xla`, one kernel in `state_pallas`), and
the outputs are one batched matmul with the per-chunk start states after it.
`gated_delta_rule_pallas` runs the same math as three Pallas launches
(`pallas_kernels.gated_delta.chunk_pallas`), differentiated through this path. Every decay is
exp of a difference of cumulative sums inside one chunk, never exp(-G) alone, so strong
decays underflow to 0 instead of overflowing. Autodiff keeps one [K, V] state (and one
[K, K] transition) per chunk, never per token.
"""

from __future__ import annotations

import functools
import math

import jax
from jax import lax
import jax.numpy as jnp

from pallas_kernels.gated_delta import chunk_pallas
from pallas_kernels.gated_delta import state_pallas
from pallas_kernels.gated_delta import state_xla
from sdm_jax.ops.gated_delta import naive
from sdm_jax.ops.gated_delta import validation
from sdm_jax.ops.triangular import unit_lower_triangular_inverse


STATE_PASSES = ("scan", "pallas")
PALLAS_BACKWARDS = ("chunked", "pallas")


def gated_delta_rule_chunked(q, k, v, g, beta, *, scale=None, initial_state=None, chunk_size=64,
                             state_pass="scan"):
  """The gated delta rule over a sequence, chunk by chunk; same contract as the reference.

  Args:
    q, k: [B, T, H, K]. v: [B, T, H, V]. g (log decay), beta: [B, T, H]. Any T: the
      sequence is padded to a multiple of chunk_size with k = 0, g = 0, beta = 0 tokens,
      which leave the state unchanged.
    scale: multiplies q; defaults to K**-0.5.
    initial_state: [B, H, K, V] or None (zeros).
    chunk_size: tokens per chunk C (> 0).
    state_pass: how the chunk start states are found. "scan": a sequential `lax.scan`, one
      [K, K] x [K, V] matmul per chunk. "pallas": one Pallas kernel that keeps the state
      on chip and walks every chunk (`pallas_kernels.gated_delta.state_pallas`; interpret
      mode off GPU; float32 only).

  Returns:
    (o [B, T, H, V] in v's dtype, final state [B, H, K, V] in float32, float64 for float64
    inputs). Matmuls accumulate in that dtype; float32/float64 inputs use full precision.
  """
  validation.check_sequence_inputs(q, k, v, g, beta, initial_state)
  if not isinstance(chunk_size, int) or chunk_size <= 0:
    raise ValueError(f"chunk_size must be a positive int, got {chunk_size!r}")
  if state_pass not in STATE_PASSES:
    raise ValueError(f"state_pass must be one of {STATE_PASSES}, got {state_pass!r}")
  initial_state = naive.initial_state_or_zeros(q, k, v, g, beta, initial_state)
  return _chunked_jit(q, k, v, g, beta, initial_state, naive.default_scale(q.shape[-1], scale),
                      chunk_size=chunk_size, state_pass=state_pass)


def gated_delta_rule_pallas(q, k, v, g, beta, *, scale=None, initial_state=None, chunk_size=64,
                            config: chunk_pallas.KernelConfig | None = None,
                            backward: str = "pallas"):
  """The gated delta rule by the chunk-local Pallas kernels; same contract as the reference.

  The forward is `chunk_pallas.gated_delta_rule` (preparation, state and output kernels;
  interpret mode off GPU).

  Args:
    As `gated_delta_rule_chunked`; chunk_size, K and V powers of two >= 16 and float32
    accumulation (`chunk_pallas.kernel_limits`).
    config: the kernels' tiling (`chunk_pallas.KernelConfig`), default
      `chunk_pallas.default_config(V, dtype of q, k, v)`.
    backward: how gradients are found. "pallas" (default): the backward kernels
      (start-state gradients, the reverse state kernel, the chunk-local backward), the
      forward keeping X, the transitions and the start states for them; with the 16-bit
      tiling they beat the chunked path's gradients on the H200 (WORKSPACE.md, issue 16).
      "chunked": they are those of `gated_delta_rule_chunked(..., state_pass="pallas")`,
      which then also runs the forward: training costs what the chunked path costs,
      forward-only calls take the kernels.

  Raises:
    ValueError: naming the field or the kernels' limit.
  """
  validation.check_sequence_inputs(q, k, v, g, beta, initial_state)
  if backward not in PALLAS_BACKWARDS:
    raise ValueError(f"backward must be one of {PALLAS_BACKWARDS}, got {backward!r}")
  initial_state = naive.initial_state_or_zeros(q, k, v, g, beta, initial_state)
  reason = chunk_pallas.kernel_limits(key_dim=q.shape[-1], value_dim=v.shape[-1],
                                      chunk_size=chunk_size, dtype=initial_state.dtype)
  if reason:
    raise ValueError(f"the Pallas gated delta kernels cannot run these inputs: {reason}")
  return _pallas_jit(q, k, v, g, beta, initial_state,
                     scale=float(naive.default_scale(q.shape[-1], scale)),
                     chunk_size=chunk_size, config=config, backward=backward)


@functools.partial(jax.jit, static_argnames=("scale", "chunk_size", "config", "backward"))
def _pallas_jit(q, k, v, g, beta, initial_state, *, scale, chunk_size, config, backward):
  twin = (functools.partial(_chunked_jit, scale=scale, chunk_size=chunk_size,
                            state_pass="pallas") if backward == "chunked" else None)
  return chunk_pallas.gated_delta_rule(q, k, v, g, beta, initial_state, scale=scale,
                                       chunk_size=chunk_size, twin=twin, config=config)


@functools.partial(jax.jit, static_argnames=("chunk_size", "state_pass"))
def _chunked_jit(q, k, v, g, beta, initial_state, scale, *, chunk_size, state_pass):
  batch, seq_len, heads, key_dim = q.shape
  value_dim = v.shape[-1]
  input_dtype = jnp.result_type(q.dtype, k.dtype, v.dtype)
  acc = initial_state.dtype
  # bf16 inputs: tensor-core matmuls with float32 accumulation; float32 inputs stay exact.
  precision = (lax.Precision.HIGHEST if jnp.dtype(input_dtype).itemsize >= 4
               else lax.Precision.DEFAULT)
  dot = functools.partial(jnp.einsum, precision=precision, preferred_element_type=acc)

  num_chunks = math.ceil(seq_len / chunk_size)
  padded_len = num_chunks * chunk_size

  def to_chunks(x):  # [B, T, H, ...] -> [N, B, H, C, ...], the one transpose per input.
    x = jnp.pad(x, [(0, 0), (0, padded_len - seq_len)] + [(0, 0)] * (x.ndim - 2))
    x = x.reshape(batch, num_chunks, chunk_size, heads, *x.shape[3:])
    return jnp.transpose(x, (1, 0, 3, 2, *range(4, x.ndim)))

  q_c, k_c, v_c = to_chunks(q), to_chunks(k), to_chunks(v)
  g_c, beta_c = to_chunks(g.astype(acc)), to_chunks(beta.astype(acc))

  g_cum = jnp.cumsum(g_c, axis=-1)  # [N, B, H, C]
  g_last = g_cum[..., -1:]
  position = jnp.arange(chunk_size)
  causal = position[:, None] >= position[None, :]
  # exp(G_t - G_i) for i <= t; the -inf keeps exp (and its gradient) finite above the diagonal.
  decay = jnp.exp(jnp.where(causal, g_cum[..., :, None] - g_cum[..., None, :], -jnp.inf))
  strictly_causal_decay = jnp.where(position[:, None] > position[None, :], decay, 0.0)

  a = beta_c[..., :, None] * strictly_causal_decay * dot("...ik,...jk->...ij", k_c, k_c)
  p = decay * dot("...ik,...jk->...ij", q_c, k_c) * scale
  solve = unit_lower_triangular_inverse(a, precision=precision)

  k_acc, v_acc = k_c.astype(acc), v_c.astype(acc)
  w = dot("...ij,...jk->...ik", solve, (beta_c * jnp.exp(g_cum))[..., None] * k_acc)
  u = dot("...ij,...jv->...iv", solve, beta_c[..., None] * v_acc)
  q_state = jnp.exp(g_cum)[..., None] * scale * q_c.astype(acc) - dot("...ij,...jk->...ik", p, w)
  o_intra = dot("...ij,...jv->...iv", p, u)
  k_to_end = jnp.exp(g_last - g_cum)[..., None] * k_acc
  transition = (jnp.exp(g_last)[..., None] * jnp.eye(key_dim, dtype=acc)
                - dot("...ck,...cj->...kj", k_to_end, w))
  update = dot("...ck,...cv->...kv", k_to_end, u)

  if state_pass == "scan":
    start_states, final_state = state_xla.chunk_states(transition, update, initial_state,
                                                       precision)
  else:
    start_states, final_state = state_pallas.chunk_states(transition, update, initial_state)
  o = o_intra + dot("...ik,...kv->...iv", q_state, start_states)  # [N, B, H, C, V]
  o = jnp.transpose(o, (1, 0, 3, 2, 4)).reshape(batch, padded_len, heads, value_dim)
  return o[:, :seq_len].astype(v.dtype), final_state
