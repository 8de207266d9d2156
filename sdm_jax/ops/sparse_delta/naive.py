"""The sparse gated delta rule token by token: the readable definition (DESIGN.md 3.1).

Per sequence b and head h, a table M [N, Dv]; token t writes the W distinct slots I_t with
weights k_t, reads the R slots J_t with weights q_t:

  dec    = exp(g_t) * M[I_t]                        only the written rows decay
  shared:   delta = beta_t (v_t - k_t^T dec)          one prediction error for all slots
            M[I_t] = dec + k_t delta^T
  per_slot: M[I_t] = dec + beta_t k_t (v_t - dec)     every slot its own error (paper Eq. 4)
  out_t  = q_t^T M[J_t]                             read after the write

The shared form is Gated DeltaNet with a sparse key and support-masked decay:
M_t = (I - beta_t k k^T) D_t M_{t-1} + beta_t k v_t^T, out_t = M_t^T q.
"""

from __future__ import annotations

import functools

import jax
from jax import lax
import jax.numpy as jnp

from pallas_kernels.sparse_delta.scan_xla import weighted_rows
from sdm_jax.ops.sparse_delta import checks


def _token_update(memory, write_idx, write_w, v, beta, g, read_idx, read_w, error):
  """One token on one table. memory [N, Dv], *_idx / *_w [W] or [R], v [Dv], beta, g []."""
  decayed = jnp.exp(g) * memory[write_idx].astype(v.dtype)
  if error == "shared":
    delta = beta * (v - weighted_rows(write_w, decayed))
    new_rows = decayed + write_w[:, None] * delta[None, :]
  else:
    new_rows = decayed + (beta * write_w)[:, None] * (v[None, :] - decayed)
  memory = memory.at[write_idx].set(new_rows.astype(memory.dtype))
  out = weighted_rows(read_w, memory[read_idx].astype(v.dtype))
  return out, memory


# Over heads, then over the batch: memory [B, H, N, Dv], token arrays [B, H, ...].
_batched_update = jax.vmap(jax.vmap(_token_update, in_axes=(0,) * 8 + (None,)),
                           in_axes=(0,) * 8 + (None,))


@functools.partial(jax.jit, static_argnames=("error",))
def _step(inputs: checks.SparseDeltaInputs, error: str):
  return _batched_update(*inputs, error)


@functools.partial(jax.jit, static_argnames=("error",))
def _scan_tokens(inputs: checks.SparseDeltaInputs, error: str):
  time_major = [jnp.moveaxis(x, 1, 0) for x in inputs[1:]]

  def step(memory, token):
    out, memory = _batched_update(memory, *token, error)
    return memory, out

  # The definition rounds nothing: the table is widened for the whole sequence.
  memory, out = lax.scan(step, inputs.memory.astype(inputs.v.dtype), time_major)
  return jnp.moveaxis(out, 0, 1), memory.astype(inputs.memory.dtype)


def sparse_delta_step_reference(memory, write_idx, write_w, v, beta, g, read_idx, read_w, *,
                                error: str = "shared") -> tuple[jax.Array, jax.Array]:
  """One token of the sparse delta rule (decode) in XLA: the table is the whole cache.

  Args:
    memory: [B, H, N, Dv] or [H, N, Dv] (shared, broadcast over B).
    write_idx: [B, H, W] integer, distinct within a token; write_w: [B, H, W].
    v: [B, H, Dv]; beta: [B, H] in (0, 1); g: [B, H] log forget gate (<= 0).
    read_idx: [B, H, R] integer; read_w: [B, H, R].
    error: "shared" (default, the trained form) or "per_slot" (paper Eq. 4).

  Returns:
    out [B, H, Dv] in v's dtype, memory [B, H, N, Dv] in its storage dtype (bfloat16 stays
    bfloat16, rounded after this token; otherwise float32, float64 for float64 inputs).
  """
  checks.check_error_form(error)
  inputs, _ = checks.canonicalize_inputs(
      memory, write_idx, write_w, v, beta, g, read_idx, read_w, time_axis=False)
  out, memory = _step(inputs, error)
  return out.astype(v.dtype), memory


def sparse_delta_rule_reference(memory, write_idx, write_w, v, beta, g, read_idx, read_w, *,
                                error: str = "shared") -> tuple[jax.Array, jax.Array]:
  """The sparse delta rule over a sequence, one `lax.scan` step per token.

  Shapes as `sparse_delta_rule`: memory [B, H, N, Dv] or [H, N, Dv]; write_idx, write_w
  [B, T, H, W]; v [B, T, H, Dv]; beta, g [B, T, H]; read_idx, read_w [B, T, H, R].
  Returns out [B, T, H, Dv] (v's dtype) and the final memory [B, H, N, Dv] (storage dtype,
  as `sparse_delta_step_reference`; a bfloat16 table is widened for the whole sequence and rounded
  once at the end). Differentiating it stores the table at every token: for small tests.
  """
  checks.check_error_form(error)
  inputs, _ = checks.canonicalize_inputs(
      memory, write_idx, write_w, v, beta, g, read_idx, read_w, time_axis=True)
  out, memory = _scan_tokens(inputs, error)
  return out.astype(v.dtype), memory
