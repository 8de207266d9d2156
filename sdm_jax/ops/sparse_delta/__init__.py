"""Sparse Delta Memory's recurrence: a gated delta rule on an N-slot table (DESIGN.md 3).

Each token writes W distinct slots and reads R slots of a per-sequence table [N, Dv]; only
the written rows decay. `sparse_delta_rule` runs a sequence (training, prefill),
`sparse_delta_step` one token (decode). Implementations: `naive.py` (token by token, the
definition) and `chunk.py` (chunks of C tokens, memory-bounded backward).
"""

from __future__ import annotations

import jax

from sdm_jax.ops.sparse_delta import checks
from sdm_jax.ops.sparse_delta.chunk import sparse_delta_rule_chunked
from sdm_jax.ops.sparse_delta.naive import sparse_delta_rule_reference
from sdm_jax.ops.sparse_delta.naive import sparse_delta_step

IMPLS = ("auto", "reference", "chunked", "pallas")


def sparse_delta_rule(memory, write_idx, write_w, v, beta, g, read_idx, read_w, *,
                      chunk_size: int = 64, error: str = "shared", impl: str = "auto"
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
    chunk_size: tokens per chunk of the chunked form; T need not be a multiple.
    error: "shared" (default, the trained form) or "per_slot" (the paper's Eq. 4).
    impl: "auto" (chunked for now), "reference" (token-by-token scan) or "chunked";
      "pallas" is reserved for the GPU kernel.

  Returns:
    out [B, T, H, Dv] in v's dtype and final_memory [B, H, N, Dv] in the accumulation
    dtype (float32; float64 when an input is float64).

  In the per-slot form, a write with beta * k = 1 erases the slot; the chunked form then
  keeps exp(-80) of the old row and passes no gradient through that erasure.
  """
  if impl not in IMPLS:
    raise ValueError(f"impl must be one of {IMPLS}, got {impl!r}")
  if impl == "pallas":
    raise ValueError(
        "impl='pallas': no Pallas kernel for the sparse delta rule exists yet; use one of "
        "('auto', 'reference', 'chunked')")
  checks.check_error_form(error)
  checks.check_chunk_size(chunk_size)
  args = (memory, write_idx, write_w, v, beta, g, read_idx, read_w)
  if impl == "reference":
    return sparse_delta_rule_reference(*args, error=error)
  return sparse_delta_rule_chunked(*args, chunk_size=chunk_size, error=error)


__all__ = [
    "IMPLS",
    "sparse_delta_rule",
    "sparse_delta_rule_chunked",
    "sparse_delta_rule_reference",
    "sparse_delta_step",
]
