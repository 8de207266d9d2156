"""Product-key top-k: the k best of S x S slots scored as sums of two halves (DESIGN.md 3.2).

`topk_xla.product_key_topk` (per-half sorts, then a sort of the pruned pair grid),
`topk_pallas.product_key_topk` (a Pallas GPU kernel: per-half max-and-mask, the pruned pair
grid, max-and-mask again) and `topk_pallas_tpu.product_key_topk` (the same selection as a
Pallas TPU kernel, 8 rows per program) share one contract, including ties: the k slots with
the largest exact sums, the lowest slot id first among equal sums (`topk_xla`'s docstring).
"""

from __future__ import annotations

from pallas_kernels.product_key import topk_pallas
from pallas_kernels.product_key import topk_pallas_tpu
from pallas_kernels.product_key import topk_xla

__all__ = ["topk_pallas", "topk_pallas_tpu", "topk_xla"]
