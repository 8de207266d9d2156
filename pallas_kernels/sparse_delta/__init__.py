"""Phase 2 of Sparse Delta Memory's chunked recurrence: apply a chunk plan to the table.

`scan_xla.scan_chunks` (a `lax.scan` over chunks, every platform) and
`scan_pallas.scan_chunks` (two persistent Pallas kernels, Triton on GPU, interpret mode on
CPU) share one contract (`plan.py`) and are tested against each other.
"""

from __future__ import annotations

from pallas_kernels.sparse_delta import scan_pallas
from pallas_kernels.sparse_delta import scan_xla
from pallas_kernels.sparse_delta.plan import ChunkCoefs, ChunkIds, ChunkPlan

__all__ = ["ChunkCoefs", "ChunkIds", "ChunkPlan", "scan_pallas", "scan_xla"]
