"""Pure-JAX operators: the math of every mixer, each with a readable reference.

Ops with several implementations take `impl` (each lists its own in `IMPLS`: "reference"
token-by-token scans, "chunked" / "xla" fast XLA paths, and for ops with Pallas kernels
"pallas" (the kernel family of this platform), "pallas_gpu" and "pallas_tpu"), resolved by
`dispatch.resolve_impl`: "auto" is the op's GPU kernel on a GPU where it has one and can
take the inputs, its fast XLA path otherwise (TPUs included).
"""

from __future__ import annotations

from sdm_jax.ops.decode_attention import single_query_attention
from sdm_jax.ops.gated_delta import gated_delta_rule
from sdm_jax.ops.gated_delta import gated_delta_step
from sdm_jax.ops.product_key import product_key_topk
from sdm_jax.ops.sparse_delta import sparse_delta_rule
from sdm_jax.ops.sparse_delta import sparse_delta_step

__all__ = [
    "gated_delta_rule",
    "gated_delta_step",
    "product_key_topk",
    "single_query_attention",
    "sparse_delta_rule",
    "sparse_delta_step",
]
