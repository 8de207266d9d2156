"""The gated delta rule, token by token: the readable definition the fast paths must match.

Per batch element and head, with a [K, V] state S:

  S_t = (I - beta_t k_t k_t^T) exp(g_t) S_{t-1} + beta_t k_t v_t^T
  o_t = S_t^T (scale * q_t)

which is the same as first decaying, then writing the prediction error of the decayed state:
S' = exp(g_t) S_{t-1};  S_t = S' + beta_t k_t (v_t - S'^T k_t)^T.
"""

from __future__ import annotations

import jax
from jax import lax
import jax.numpy as jnp

from sdm_jax.ops.gated_delta import validation
from sdm_jax.ops.precision import accumulation_dtype


def default_scale(key_dim: int, scale: float | None) -> float:
  return key_dim**-0.5 if scale is None else scale


def _step(q, k, v, g, beta, state, scale):
  """One token in the accumulation dtype. q, k [..., K], v [..., V], g, beta [...], state [..., K, V]."""
  precision = lax.Precision.HIGHEST
  state = jnp.exp(g)[..., None, None] * state
  predicted = jnp.einsum("...kv,...k->...v", state, k, precision=precision)
  error = beta[..., None] * (v - predicted)
  state = state + k[..., :, None] * error[..., None, :]
  o = jnp.einsum("...kv,...k->...v", state, scale * q, precision=precision)
  return o, state


def gated_delta_step(q, k, v, g, beta, state, *, scale=None):
  """One decode step of the gated delta rule (no T axis).

  Args:
    q, k: [B, H, K]. v: [B, H, V]. g (log decay, <= 0), beta (write strength): [B, H].
    state: [B, H, K, V], the state after the previous token.
    scale: multiplies q; defaults to K**-0.5.

  Returns:
    (o [B, H, V] in v's dtype, new state [B, H, K, V] in float32, or float64 for float64 inputs).
  """
  validation.check_step_inputs(q, k, v, g, beta, state)
  return _step_jit(q, k, v, g, beta, state, default_scale(q.shape[-1], scale))


@jax.jit
def _step_jit(q, k, v, g, beta, state, scale):
  acc = accumulation_dtype(q.dtype, k.dtype, v.dtype, g.dtype, beta.dtype, state.dtype)
  o, state = _step(*(x.astype(acc) for x in (q, k, v, g, beta, state)), scale)
  return o.astype(v.dtype), state


def gated_delta_rule_reference(q, k, v, g, beta, *, scale=None, initial_state=None):
  """The gated delta rule over a sequence, as a `lax.scan` over tokens.

  Args:
    q, k: [B, T, H, K]. v: [B, T, H, V]. g, beta: [B, T, H].
    scale: multiplies q; defaults to K**-0.5.
    initial_state: [B, H, K, V] or None (zeros).

  Returns:
    (o [B, T, H, V] in v's dtype, final state [B, H, K, V] in the accumulation dtype).
  Autodiff through this stores one [K, V] state per token: use it for tests, not training.
  """
  validation.check_sequence_inputs(q, k, v, g, beta, initial_state)
  initial_state = initial_state_or_zeros(q, k, v, g, beta, initial_state)
  return _reference_jit(q, k, v, g, beta, initial_state, default_scale(q.shape[-1], scale))


def initial_state_or_zeros(q, k, v, g, beta, initial_state):
  """initial_state in the accumulation dtype, zeros [B, H, K, V] when None."""
  acc = accumulation_dtype(q.dtype, k.dtype, v.dtype, g.dtype, beta.dtype)
  if initial_state is None:
    batch, _, heads, key_dim = q.shape
    return jnp.zeros((batch, heads, key_dim, v.shape[-1]), acc)
  return initial_state.astype(accumulation_dtype(acc, initial_state.dtype))


@jax.jit
def _reference_jit(q, k, v, g, beta, initial_state, scale):
  acc = initial_state.dtype

  def body(state, token):
    o, state = _step(*token, state, scale)
    return state, o

  # Time leads for the scan: [T, B, H, ...].
  tokens = tuple(jnp.moveaxis(x.astype(acc), 1, 0) for x in (q, k, v, g, beta))
  final_state, o = lax.scan(body, initial_state, tokens)
  return jnp.moveaxis(o, 0, 1).astype(v.dtype), final_state
