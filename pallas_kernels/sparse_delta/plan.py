"""The contract between SDM's two phases: a chunk plan (DESIGN.md 3.4).

Phase 1 (`sdm_jax.ops.sparse_delta.chunk.plan_chunks`) turns the token inputs into a plan:
integer addressing (`ChunkIds`) and table-independent coefficients (`ChunkCoefs`), for all
chunks at once. Phase 2 (`scan_xla.scan_chunks`, `scan_pallas.scan_chunks`) applies the plan
to the table, chunk after chunk. Leading axes of every field are [..., n_chunks]; C is the
chunk length, W / R the writes / reads per token, U = C * W the unique-slot capacity.
"""

from __future__ import annotations

from typing import NamedTuple

import jax

from pallas_kernels.sparse_delta import layout


class ChunkIds(NamedTuple):
  """Integer addressing of each chunk."""
  slots: jax.Array      # [..., U] sorted unique written slots, then distinct ids >= N
  write_pos: jax.Array  # [..., C, W] position of each written id in `slots`
  read_idx: jax.Array   # [..., C, R] read slot ids
  write_order: jax.Array  # [..., C * W] token-major write entries (t * W + i) sorted by slot,
  #                         ties by token: the sort phase 1 made, reused by the kernels' layout
  read_order: jax.Array   # [..., C * R] token-major read entries (t * R + j) sorted by slot,
  #                         ties by token (phase 1's pair-weight kernel and phase 2's layout)
  read_pos: jax.Array     # [..., C, R] position of each read id in `slots`, U if the chunk
  #                         does not write it
  write_inverse: jax.Array  # [..., C * W] the inverse of write_order: each write's place in
  #                           the sorted list
  read_inverse: jax.Array   # [..., C * R] the inverse of read_order

  @property
  def write_permutation(self) -> layout.Permutation:
    return layout.Permutation(self.write_order, self.write_inverse)

  @property
  def read_permutation(self) -> layout.Permutation:
    return layout.Permutation(self.read_order, self.read_inverse)


class ChunkCoefs(NamedTuple):
  """Table-independent coefficients of each chunk (the differentiable part of phase 1).

  L_t(s) is slot s's cumulative log decay over the chunk's writes up to token t.
  """
  write_coef: jax.Array | None  # [..., C, W] k_u(s) exp(L_u(s)); shared form only
  solve: jax.Array | None       # [..., C, C] (I + diag(beta) A)^-1 diag(beta); shared only
  read_coef: jax.Array          # [..., C, R] q_t(s) exp(L_t(s))
  qk: jax.Array                 # [..., C, C] QK[t, u], u <= t
  update_coef: jax.Array        # [..., C, W] k_u(s) exp(L_C(s) - L_u(s))
  end_decay: jax.Array          # [..., U] exp(L_C(s)) of each unique slot
  values: jax.Array             # [..., C, Dv] v (shared) or beta v (per slot)


class ChunkPlan(NamedTuple):
  ids: ChunkIds
  coefs: ChunkCoefs
