"""Gated DeltaNet's recurrence (the gated delta rule): public dispatch over implementations.

  S_t = (I - beta_t k_t k_t^T) exp(g_t) S_{t-1} + beta_t k_t v_t^T,   o_t = S_t^T (scale q_t)
"""

from __future__ import annotations

import jax.numpy as jnp

from pallas_kernels import platform
from pallas_kernels.gated_delta import chunk_pallas
from pallas_kernels.gated_delta import state_pallas
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


# Timed on one H200 (WORKSPACE.md, issue 16, session 15; bf16, K = 64, V = 128, C = 64):
# the kernels with their backward kernels beat the chunked path (XLA chunk-local math and
# the state kernel) at the three shapes. Only that was measured, so "auto" takes
# them for 16-bit inputs at that chunk length and keeps the chunked path elsewhere.
AUTO_KERNEL_CHUNK_SIZE = 64


def auto_kernel_unsupported(q, k, v, chunk_size: int) -> str | None:
  """Why "auto" does not run the Pallas kernels on these inputs, or None if it does."""
  reason = pallas_unsupported(q, k, v, chunk_size)
  if reason:
    return reason
  if jnp.result_type(q.dtype, k.dtype, v.dtype).itemsize >= 4:
    return "the kernels were timed with 16-bit inputs only"
  if chunk_size != AUTO_KERNEL_CHUNK_SIZE:
    return f"the kernels were timed at chunk_size {AUTO_KERNEL_CHUNK_SIZE} only"
  return None


def state_kernel_unsupported(q, k, v) -> str | None:
  """Why the Pallas state kernel cannot take these inputs, or None if it can."""
  return state_pallas.kernel_limits(key_dim=q.shape[-1], value_dim=v.shape[-1],
                                    dtype=accumulation_dtype(q.dtype, k.dtype, v.dtype))


def chunked_state_pass(q, k, v) -> str:
  """The state pass "chunked" runs: the Pallas state kernel on a GPU when it takes the
  inputs (faster than the `lax.scan` at every shape timed on the H200), the scan otherwise."""
  if platform.on_gpu() and state_kernel_unsupported(q, k, v) is None:
    return "pallas"
  return "scan"


def resolve_impl(impl: str, q, k, v, *, chunk_size: int = 64) -> str:
  """The implementation `impl` runs for these inputs (shapes and dtypes are what count).

  "auto" is "pallas_gpu" on a GPU where `auto_kernel_unsupported` says nothing against it
  (16-bit inputs, chunk_size 64, K and V powers of two >= 16), else "chunked": the chunked
  path, whose state pass is the Pallas state kernel on a GPU (`chunked_state_pass`).
  "pallas" is "pallas_gpu" (the chunk-local kernels too; interpreted off GPU); there is no
  TPU kernel, so "pallas" on a TPU raises.
  """
  resolved = dispatch.resolve_impl(
      impl, IMPLS, xla="chunked",
      pallas_unsupported=lambda: auto_kernel_unsupported(q, k, v, chunk_size))
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
    impl: "auto" (see `resolve_impl`: the kernels on a GPU for 16-bit inputs at
      chunk_size 64, else "chunked") | "reference" | "chunked" (XLA chunk-local math; the
      state pass the Pallas state kernel on a GPU where it takes the inputs, a `lax.scan`
      elsewhere) | "pallas" = "pallas_gpu" (`gated_delta_rule_pallas`: the chunk-local and
      state Pallas kernels, forward and backward; interpret mode off GPU; no TPU kernel;
      ValueError naming the limit for inputs they cannot take: float64, K, V or chunk_size
      not a power of two >= 16).

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
                                  chunk_size=chunk_size, state_pass=chunked_state_pass(q, k, v))


__all__ = [
    "AUTO_KERNEL_CHUNK_SIZE",
    "IMPLS",
    "PALLAS_BACKWARDS",
    "STATE_PASSES",
    "gated_delta_rule",
    "gated_delta_rule_chunked",
    "gated_delta_rule_pallas",
    "gated_delta_rule_reference",
    "gated_delta_step",
    "auto_kernel_unsupported",
    "chunked_state_pass",
    "resolve_impl",
]
