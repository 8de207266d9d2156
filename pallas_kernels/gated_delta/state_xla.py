"""The chunk-state recurrence of the chunked gated delta rule, in XLA (a `lax.scan`).

The chunked form (`sdm_jax.ops.gated_delta.chunk`) reduces the sequential part of the gated
delta rule to an affine recurrence over chunks,

  S_0 = initial_state,   S_{n+1} = transition_n S_n + update_n,

with transition [K, K] and update [K, V] computed for all chunks at once. This is the twin
of `state_pallas`: same contract, same results up to float32 rounding.
"""

from __future__ import annotations

import functools

import jax
from jax import lax
import jax.numpy as jnp


def _linear_recurrence(transition, update, initial_state, precision):
  """S_0 = initial_state, S_{n+1} = transition_n S_n + update_n; returns ([S_0..S_{N-1}], S_N).

  transition [N, ..., K, K], update [N, ..., K, V], initial_state [..., K, V].
  """
  def step(state, chunk):
    transition, update = chunk
    new_state = jnp.einsum("...kj,...jv->...kv", transition, state, precision=precision,
                           preferred_element_type=state.dtype) + update
    return new_state, state

  final_state, start_states = lax.scan(step, initial_state, (transition, update))
  return start_states, final_state


@functools.partial(jax.custom_jvp, nondiff_argnums=(3,))
def chunk_states(transition, update, initial_state, precision=None):
  """([S_0 .. S_{N-1}] [N, ..., K, V], S_N [..., K, V]) of the recurrence above.

  transition [N, ..., K, K], update [N, ..., K, V], initial_state [..., K, V], all in the
  accumulation dtype; `precision` of the per-chunk matmul.
  """
  return _linear_recurrence(transition, update, initial_state, precision)


@chunk_states.defjvp
def _chunk_states_jvp(precision, primals, tangents):
  # The tangent obeys the same recurrence, forced by d(transition) S_n + d(update):
  #   dS_{n+1} = transition_n dS_n + (d transition_n S_n + d update_n).
  # Transposed for reverse mode, the scan does one [K, K]^T x [K, V] matmul per chunk, and the
  # transition cotangents become one batched matmul outside it (plain autodiff of the scan
  # would do both inside the loop).
  transition, update, initial_state = primals
  transition_dot, update_dot, initial_state_dot = tangents
  start_states, final_state = _linear_recurrence(transition, update, initial_state, precision)
  forcing = update_dot + jnp.einsum("...kj,...jv->...kv", transition_dot, start_states,
                                    precision=precision,
                                    preferred_element_type=start_states.dtype)
  tangent_out = _linear_recurrence(transition, forcing, initial_state_dot, precision)
  return (start_states, final_state), tangent_out
