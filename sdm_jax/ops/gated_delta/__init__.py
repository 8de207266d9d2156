"""Gated DeltaNet's recurrence (the gated delta rule): public dispatch over implementations.

  S_t = (I - beta_t k_t k_t^T) exp(g_t) S_{t-1} + beta_t k_t v_t^T,   o_t = S_t^T (scale q_t)
"""

from __future__ import annotations

import jax.numpy as jnp

from pallas_kernels import platform
from pallas_kernels.gated_delta import state_pallas
from sdm_jax.ops import dispatch
from sdm_jax.ops.precision import accumulation_dtype
from sdm_jax.ops.gated_delta.chunk import STATE_PASSES
from sdm_jax.ops.gated_delta.chunk import gated_delta_rule_chunked
from sdm_jax.ops.gated_delta.naive import gated_delta_rule_reference
from sdm_jax.ops.gated_delta.naive import gated_delta_step

IMPLS = ("auto", "reference", "chunked", "pallas", "pallas_gpu")

# "auto" keeps the XLA state pass until the state kernel has been compiled and timed on the
# H200 against it (issue 16); `impl="pallas"` runs the kernel now.
_AUTO_WAITS_FOR_GPU_TIMING = "the state kernel is not yet timed on a GPU"


def pallas_unsupported(q, k, v) -> str | None:
  """Why the Pallas state kernel cannot take these inputs (q, k [B, T, H, K], v [B, T, H, V]),
  or None if it can."""
  return state_pallas.kernel_limits(key_dim=q.shape[-1], value_dim=v.shape[-1],
                                    dtype=accumulation_dtype(q.dtype, k.dtype, v.dtype))


def resolve_impl(impl: str) -> str:
  """The implementation `impl` runs: "auto" is the chunked XLA path on every platform
  (its state pass chosen by `default_state_pass`) until the state kernel is timed on the
  GPU; "pallas" / "pallas_gpu" is the chunked path with the Pallas (GPU) state kernel,
  interpreted off GPU. There is no TPU kernel: "pallas" on a TPU and "pallas_tpu" raise."""
  resolved = dispatch.resolve_impl(impl, IMPLS, xla="chunked",
                                   pallas_unsupported=lambda: _AUTO_WAITS_FOR_GPU_TIMING)
  if resolved == "pallas_tpu":
    raise ValueError("there is no TPU kernel for the gated delta rule: use impl='chunked', "
                     "or 'pallas_gpu' (the GPU kernel, interpreted)")
  return resolved


def default_state_pass(dtype) -> str:
  """The chunked path's state pass for this platform and input dtype.

  On one H200 (JAX 0.11.2, bf16, chunk 64) the associative scan beat the sequential scan
  by 15% (fwd) to 18% (fwd+bwd) at B=4, T=4096, H=8 and B=2, T=8192, H=16 (WORKSPACE.md);
  on CPU the sequential scan does fewer flops, and flops are what a CPU is short of.
  float64 keeps the sequential scan everywhere: XLA:GPU in JAX 0.11.2 aborts the process
  while compiling the float64 backward of the associative scan.
  """
  if platform.on_gpu() and jnp.dtype(dtype) != jnp.float64:
    return "associative"
  return "scan"


def gated_delta_rule(q, k, v, g, beta, *, scale=None, initial_state=None, chunk_size=64,
                     impl="auto"):
  """The gated delta rule over a sequence.

  Args:
    q, k: [B, T, H, K] (not normalised here). v: [B, T, H, V]. g (log decay), beta: [B, T, H].
    scale: multiplies q; defaults to K**-0.5.
    initial_state: [B, H, K, V] or None (zeros).
    chunk_size: tokens per chunk of the chunked path (> 0); any T works.
    impl: "auto" (chunked, with the platform's `default_state_pass`) | "reference" |
      "chunked" | "pallas" = "pallas_gpu" (chunked, the state pass one Pallas kernel;
      interpret mode off GPU; no TPU kernel; ValueError naming the limit for inputs it cannot take: float64, K not a power of
      two >= 16, V not a multiple of 16).

  Returns:
    (o [B, T, H, V] in v's dtype, final state [B, H, K, V] in float32, float64 for float64
    inputs).
  """
  impl = resolve_impl(impl)
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
    state_pass = default_state_pass(jnp.result_type(q, k, v))
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
