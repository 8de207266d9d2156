"""Gated DeltaNet's recurrence (the gated delta rule): public dispatch over implementations.

  S_t = (I - beta_t k_t k_t^T) exp(g_t) S_{t-1} + beta_t k_t v_t^T,   o_t = S_t^T (scale q_t)
"""

from __future__ import annotations

from pallas_kernels.gated_delta import chunk_pallas
from sdm_jax.ops import dispatch
from sdm_jax.ops.precision import accumulation_dtype
from sdm_jax.ops.gated_delta.chunk import PALLAS_BACKWARDS
from sdm_jax.ops.gated_delta.chunk import STATE_PASSES
from sdm_jax.ops.gated_delta.chunk import gated_delta_rule_chunked
from sdm_jax.ops.gated_delta.chunk import gated_delta_rule_pallas
from sdm_jax.ops.gated_delta.naive import gated_delta_rule_reference
from sdm_jax.ops.gated_delta.naive import gated_delta_step

IMPLS = ("auto", "reference", "chunked", "pallas", "pallas_gpu")


def pallas_unsupported(q, k, v, chunk_size: int) -> str | None:
  """Why the Pallas kernels cannot take these inputs (q, k [B, T, H, K], v [B, T, H, V]) at
  this chunk size, or None if they can."""
  return chunk_pallas.kernel_limits(key_dim=q.shape[-1], value_dim=v.shape[-1],
                                    chunk_size=chunk_size,
                                    dtype=accumulation_dtype(q.dtype, k.dtype, v.dtype))


def resolve_impl(impl: str, q, k, v, *, chunk_size: int = 64) -> str:
  """The implementation `impl` runs for these inputs (shapes and dtypes are what count).

  "auto" is the Pallas kernels ("pallas_gpu") on a GPU when they take the inputs
  (`pallas_unsupported`: float32 accumulation, K, V and chunk_size powers of two >= 16),
  and the chunked XLA path ("chunked") otherwise. "pallas" is "pallas_gpu" (interpreted
  off GPU); there is no TPU kernel, so "pallas" on a TPU raises.
  """
  resolved = dispatch.resolve_impl(
      impl, IMPLS, xla="chunked",
      pallas_unsupported=lambda: pallas_unsupported(q, k, v, chunk_size))
  if resolved == "pallas_tpu":
    raise ValueError("there is no TPU kernel for the gated delta rule: use impl='chunked', "
                     "or 'pallas_gpu' (the GPU kernel, interpreted)")
  return resolved


def gated_delta_rule(q, k, v, g, beta, *, scale=None, initial_state=None, chunk_size=64,
                     impl="auto"):
  """The gated delta rule over a sequence.

  Args:
    q, k: [B, T, H, K] (not normalised here). v: [B, T, H, V]. g (log decay), beta: [B, T, H].
    scale: multiplies q; defaults to K**-0.5.
    initial_state: [B, H, K, V] or None (zeros).
    chunk_size: tokens per chunk of the chunked path (> 0); any T works.
    impl: "auto" (see `resolve_impl`: the Pallas kernels on a GPU when they take the
      inputs, else "chunked") | "reference" | "chunked" (XLA; the state pass a `lax.scan`)
      | "pallas" = "pallas_gpu" (`gated_delta_rule_pallas`: the chunk-local and state
      Pallas kernels for the forward, gradients through the chunked path with the state
      kernel; interpret mode off GPU; no TPU kernel; ValueError naming the limit for inputs
      they cannot take: float64, K, V or chunk_size not a power of two >= 16).

  Returns:
    (o [B, T, H, V] in v's dtype, final state [B, H, K, V] in float32, float64 for float64
    inputs).
  """
  if not isinstance(chunk_size, int) or chunk_size <= 0:
    raise ValueError(f"chunk_size must be a positive int, got {chunk_size!r}")
  impl = resolve_impl(impl, q, k, v, chunk_size=chunk_size)
  if impl == "reference":
    return gated_delta_rule_reference(q, k, v, g, beta, scale=scale, initial_state=initial_state)
  if impl == "pallas_gpu":
    reason = pallas_unsupported(q, k, v, chunk_size)
    if reason:
      raise ValueError(f"impl={impl!r} cannot run these inputs: {reason}")
    return gated_delta_rule_pallas(q, k, v, g, beta, scale=scale, initial_state=initial_state,
                                   chunk_size=chunk_size)
  return gated_delta_rule_chunked(q, k, v, g, beta, scale=scale, initial_state=initial_state,
                                  chunk_size=chunk_size)


__all__ = [
    "IMPLS",
    "PALLAS_BACKWARDS",
    "STATE_PASSES",
    "gated_delta_rule",
    "gated_delta_rule_chunked",
    "gated_delta_rule_pallas",
    "gated_delta_rule_reference",
    "gated_delta_step",
    "resolve_impl",
]
