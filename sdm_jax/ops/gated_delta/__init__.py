"""Gated DeltaNet's recurrence (the gated delta rule): public dispatch over implementations.

  S_t = (I - beta_t k_t k_t^T) exp(g_t) S_{t-1} + beta_t k_t v_t^T,   o_t = S_t^T (scale q_t)
"""

from __future__ import annotations


from pallas_kernels.gated_delta import state_pallas
from sdm_jax.ops import dispatch
from sdm_jax.ops.precision import accumulation_dtype
from sdm_jax.ops.gated_delta.chunk import STATE_PASSES
from sdm_jax.ops.gated_delta.chunk import gated_delta_rule_chunked
from sdm_jax.ops.gated_delta.naive import gated_delta_rule_reference
from sdm_jax.ops.gated_delta.naive import gated_delta_step

IMPLS = ("auto", "reference", "chunked", "pallas", "pallas_gpu")


def pallas_unsupported(q, k, v) -> str | None:
  """Why the Pallas state kernel cannot take these inputs (q, k [B, T, H, K], v [B, T, H, V]),
  or None if it can."""
  return state_pallas.kernel_limits(key_dim=q.shape[-1], value_dim=v.shape[-1],
                                    dtype=accumulation_dtype(q.dtype, k.dtype, v.dtype))


def resolve_impl(impl: str, q, k, v) -> str:
  """The implementation `impl` runs for these inputs (shapes and dtypes are what count).

  "auto" is the chunked path with the Pallas state kernel ("pallas_gpu") on a GPU when the
  kernel takes the inputs (`pallas_unsupported`: float32 accumulation, K a power of two
  >= 16, V a multiple of 16), and the chunked path with the XLA scan ("chunked")
  otherwise. On one H200 the kernel was 1.07-1.6x faster than the XLA state passes at
  every shape of issue 16 (WORKSPACE.md). "pallas" is "pallas_gpu" (interpreted off GPU);
  there is no TPU kernel, so "pallas" on a TPU raises.
  """
  resolved = dispatch.resolve_impl(impl, IMPLS, xla="chunked",
                                   pallas_unsupported=lambda: pallas_unsupported(q, k, v))
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
    impl: "auto" (see `resolve_impl`: the state kernel on a GPU when it takes the inputs,
      else "chunked") | "reference" | "chunked" (the state pass a `lax.scan`) | "pallas" =
      "pallas_gpu" (chunked, the state pass one Pallas kernel; interpret mode off GPU; no
      TPU kernel; ValueError naming the limit for inputs it cannot take: float64, K not a
      power of two >= 16, V not a multiple of 16).

  Returns:
    (o [B, T, H, V] in v's dtype, final state [B, H, K, V] in float32, float64 for float64
    inputs).
  """
  impl = resolve_impl(impl, q, k, v)
  if not isinstance(chunk_size, int) or chunk_size <= 0:
    raise ValueError(f"chunk_size must be a positive int, got {chunk_size!r}")
  if impl == "reference":
    return gated_delta_rule_reference(q, k, v, g, beta, scale=scale, initial_state=initial_state)
  if impl == "pallas_gpu":
    reason = pallas_unsupported(q, k, v)
    if reason:
      raise ValueError(f"impl={impl!r} cannot run these inputs: {reason}")
    state_pass = "pallas"
  else:
    state_pass = "scan"
  return gated_delta_rule_chunked(q, k, v, g, beta, scale=scale, initial_state=initial_state,
                                  chunk_size=chunk_size, state_pass=state_pass)


__all__ = [
    "IMPLS",
    "STATE_PASSES",
    "gated_delta_rule",
    "gated_delta_rule_chunked",
    "gated_delta_rule_reference",
    "gated_delta_step",
    "resolve_impl",
]
