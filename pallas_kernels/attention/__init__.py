"""Attention for one query per sequence (a decode step) over a cache of keys and values.

`decode_xla.single_query_attention` (multiply-and-reduce over the cache's own layout, every
platform) and `decode_pallas.single_query_attention` (a split-cache Pallas GPU kernel:
Triton on a GPU, interpret mode elsewhere) share one contract and are tested against each
other.
"""

from __future__ import annotations

from pallas_kernels.attention import decode_pallas
from pallas_kernels.attention import decode_xla

__all__ = ["decode_pallas", "decode_xla"]
