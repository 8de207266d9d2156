"""Phase 2 of Sparse Delta Memory's chunked recurrence: apply a chunk plan to the table.

`scan_xla.scan_chunks` (a `lax.scan` over chunks, every platform), `scan_pallas.scan_chunks`
(Pallas GPU kernels per chunk: Triton on a GPU, interpret mode elsewhere) and
`scan_pallas_tpu.scan_chunks` (Pallas TPU kernels over all chunks: Mosaic on a TPU, TPU
interpret mode elsewhere) share one contract (`plan.py`) and are tested against each other.
"""

from __future__ import annotations

from pallas_kernels.sparse_delta import scan_pallas
from pallas_kernels.sparse_delta import scan_pallas_tpu
from pallas_kernels.sparse_delta import scan_xla
from pallas_kernels.sparse_delta.plan import ChunkCoefs, ChunkIds, ChunkPlan

__all__ = ["ChunkCoefs", "ChunkIds", "ChunkPlan", "scan_pallas", "scan_pallas_tpu",
           "scan_xla"]
