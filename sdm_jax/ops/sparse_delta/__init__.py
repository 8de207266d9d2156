"""Sparse Delta Memory's recurrence: a gated delta rule on an N-slot table (DESIGN.md 3).

Each token writes W distinct slots and reads R slots of a per-sequence table [N, Dv]; only
the written rows decay. `sparse_delta_rule` runs a sequence (training, prefill),
`sparse_delta_step` one token (decode). Implementations: `naive.py` (token by token, the
definition) and `chunk.py` (chunks of C tokens, memory-bounded backward), whose phase 2
runs in XLA ("chunked") or as Pallas kernels (`pallas_kernels.sparse_delta`): "pallas_gpu"
(Triton), "pallas_tpu" (Mosaic) or "pallas" (the family of this platform). The decode step
is the XLA step of `naive.py` or one fused GPU kernel (`step_pallas`).
"""

from __future__ import annotations

import jax

from pallas_kernels.sparse_delta import step_pallas
from sdm_jax.ops import dispatch
from sdm_jax.ops.precision import accumulation_dtype
from sdm_jax.ops.sparse_delta import checks
from sdm_jax.ops.sparse_delta.chunk import pallas_unsupported
from sdm_jax.ops.sparse_delta.chunk import sparse_delta_rule_chunked
from sdm_jax.ops.sparse_delta.naive import sparse_delta_rule_reference
from sdm_jax.ops.sparse_delta.naive import sparse_delta_step_reference

IMPLS = ("auto", "reference", "chunked") + dispatch.PALLAS_IMPLS


def resolve_impl(impl: str, memory, v, *, chunk_size: int, accumulation=None) -> str:
  """The implementation `impl` runs for these inputs (the op's `memory` and `v`;
  `accumulation`: the dtype all float inputs accumulate in, default from memory and v).

  "auto" is the GPU kernels on a GPU when they can take the inputs (`pallas_unsupported`:
  float32 or bfloat16 table, float32 accumulation, Dv a multiple of 16, chunk_size a power
  of two in [16, 256]) and the chunked XLA path otherwise (TPUs included); "pallas" is
  "pallas_tpu" on a TPU and "pallas_gpu" elsewhere; every other value is itself (a kernel
  family off its platform runs in interpret mode, slowly: for tests).
  """
  return dispatch.resolve_impl(
      impl, IMPLS, xla="chunked", pallas_unsupported=lambda: pallas_unsupported(
          memory, v, chunk_size,
          accumulation_dtype(memory, v) if accumulation is None else accumulation))


def sparse_delta_rule(memory, write_idx, write_w, v, beta, g, read_idx, read_w, *,
                      chunk_size: int = 32, error: str = "shared", impl: str = "auto"
                      ) -> tuple[jax.Array, jax.Array]:
  """The sparse gated delta rule over a sequence.

  Per sequence b, head h and token t (M the table of (b, h)):
    dec = exp(g_t) M[I_t];  shared:   delta = beta_t (v_t - k_t^T dec), M[I_t] = dec + k_t delta^T
                            per_slot: M[I_t] = dec + beta_t k_t (v_t - dec)
    out_t = q_t^T M[J_t]   (after the write)

  Args:
    memory: [B, H, N, Dv] (one table per sequence) or [H, N, Dv] (a shared initial table,
      broadcast over B; its gradient sums over the batch).
    write_idx: [B, T, H, W] integer slot ids in [0, N). The W ids of one token must be
      distinct (product keys guarantee it); duplicates give undefined results. Ids are
      not range-checked (they may be traced).
    write_w: [B, T, H, W] write weights k (softmax in SDM).
    v: [B, T, H, Dv] values; its dtype is the output's.
    beta: [B, T, H] write strength in (0, 1).
    g: [B, T, H] log forget gate, finite and <= 0.
    read_idx: [B, T, H, R] integer slot ids in [0, N).
    read_w: [B, T, H, R] read weights q.
    chunk_size: tokens per chunk of the chunked forms; T need not be a multiple. The plan's
      cost grows as T * max(W, R) * C, so short chunks pay: 32 was the fastest of
      {16, 32, 64, 128} for the layer on the H200 at both benchmarked configs (WORKSPACE.md).
    error: "shared" (default, the trained form) or "per_slot" (the paper's Eq. 4).
    impl: "auto" (the GPU kernels on GPU where they apply, else "chunked"; see
      `resolve_impl`), "reference" (token-by-token scan), "chunked" (phase 2 in XLA),
      "pallas_gpu" / "pallas_tpu" (phase 2 by that kernel family, anywhere: interpret mode
      off its platform; the TPU kernels take a float32 table and Dv a multiple of 128) or
      "pallas" (the family of this platform). A kernel raises a ValueError naming the limit
      for inputs it cannot take.

  Returns:
    out [B, T, H, Dv] in v's dtype and final_memory [B, H, N, Dv] in the table's storage
    dtype: a bfloat16 table stays bfloat16 (rows widened for the math, rounded once per
    chunk when stored), others float32 (float64 when an input is float64). Gradients are
    accumulated in float32 either way.

  In the per-slot form, a write with beta * k = 1 erases the slot; the chunked form then
  keeps exp(-80) of the old row and passes no gradient through that erasure.
  """
  checks.check_error_form(error)
  checks.check_chunk_size(chunk_size)
  impl = resolve_impl(impl, memory, v, chunk_size=chunk_size, accumulation=accumulation_dtype(
      memory, write_w, v, beta, g, read_w))
  args = (memory, write_idx, write_w, v, beta, g, read_idx, read_w)
  if impl == "reference":
    return sparse_delta_rule_reference(*args, error=error)
  return sparse_delta_rule_chunked(*args, chunk_size=chunk_size, error=error, impl=impl)


def step_kernel_unsupported(memory, v, accumulation) -> str | None:
  """Why the fused GPU step kernel cannot take these inputs (the step's `memory`, `v`),
  or None if it can."""
  return step_pallas.kernel_limits(
      value_dim=memory.shape[-1], table_dtype=checks.storage_dtype(memory.dtype, accumulation),
      accumulation=accumulation)


def sparse_delta_step(memory, write_idx, write_w, v, beta, g, read_idx, read_w, *,
                      error: str = "shared", impl: str = "auto") -> tuple[jax.Array, jax.Array]:
  """One token of the sparse delta rule (decode): the table is the whole cache.

  Args:
    memory: [B, H, N, Dv] or [H, N, Dv] (shared, broadcast over B).
    write_idx: [B, H, W] integer, distinct within a token, in [0, N); write_w: [B, H, W].
    v: [B, H, Dv]; beta: [B, H] in (0, 1); g: [B, H] log forget gate (<= 0).
    read_idx: [B, H, R] integer in [0, N); read_w: [B, H, R].
    error: "shared" (default, the trained form) or "per_slot" (paper Eq. 4).
    impl: "auto" = the fused GPU kernel (`pallas_kernels.sparse_delta.step_pallas`) on a
      GPU when it takes the inputs (float32 or bfloat16 table, float32 accumulation, Dv a
      multiple of 16), else the XLA step; "pallas" / "pallas_gpu" = the kernel
      (interpreted off GPU; ValueError naming the limit for inputs it cannot take); every
      other value of `IMPLS` = the XLA step (there is no TPU step kernel). The kernel
      updates the table in place when the caller's jit donates it.

  Returns:
    out [B, H, Dv] in v's dtype, memory [B, H, N, Dv] in its storage dtype (bfloat16 stays
    bfloat16, rounded after this token; otherwise float32, float64 for float64 inputs).
  """
  accumulation = accumulation_dtype(memory, write_w, v, beta, g, read_w)
  impl = dispatch.resolve_impl(impl, IMPLS, xla="reference", pallas_unsupported=lambda: (
      step_kernel_unsupported(memory, v, accumulation)))
  if impl != "pallas_gpu":
    return sparse_delta_step_reference(memory, write_idx, write_w, v, beta, g, read_idx,
                                       read_w, error=error)
  checks.check_error_form(error)
  reason = step_kernel_unsupported(memory, v, accumulation)
  if reason:
    raise ValueError(f"impl={impl!r} cannot run these inputs: {reason}")
  inputs, _ = checks.canonicalize_inputs(
      memory, write_idx, write_w, v, beta, g, read_idx, read_w, time_axis=False)
  out, memory = step_pallas.sparse_delta_step(*inputs, error=error)
  return out.astype(v.dtype), memory


__all__ = [
    "IMPLS",
    "resolve_impl",
    "sparse_delta_rule",
    "sparse_delta_rule_chunked",
    "sparse_delta_rule_reference",
    "sparse_delta_step",
    "sparse_delta_step_reference",
    "step_kernel_unsupported",
]
