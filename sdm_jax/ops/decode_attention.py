"""Softmax attention of one query per sequence over a decode cache (the `A` and `S` decode
step). Implementations (same results) live in `pallas_kernels.attention`: "xla"
(multiply-and-reduce over the cache's own layout) and the split-cache GPU kernel
("pallas_gpu"; "pallas" is the same family here: there is no TPU kernel).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from pallas_kernels.attention import decode_pallas
from pallas_kernels.attention import decode_xla
from sdm_jax.ops import dispatch

IMPLS = ("auto", "xla", "pallas", "pallas_gpu")
# "auto" takes the kernel on a GPU only where it is faster than the XLA path. Timed on the
# H200 (session 12; WORKSPACE.md, "Decode step"): 1.04-1.28x faster at B = 1, but 0.96x at
# B = 8 and 128K, where XLA already reads the cache at 3.5 TB/s, so "auto" keeps XLA.
AUTO_TAKES_KERNEL = False


def single_query_attention(q: jax.Array, k: jax.Array, v: jax.Array, q_positions: jax.Array,
                           k_positions: jax.Array, *, window: int | None = None,
                           scale: float | None = None, impl: str = "auto") -> jax.Array:
  """`o[b, h] = softmax_l(scale * q[b, h] . k[b, l, h] | visible) @ v[b, :, h]`.

  Args:
    q: [B, 1, H, D]; k, v: [B, L, H, D] (a cache, any slot order).
    q_positions: [B, 1]; k_positions: [B, L], negative for an empty slot. Key l is visible
      when 0 <= k_pos <= q_pos and, with a window, q_pos - k_pos < window.
    window: keys per query, or None for full causal attention.
    scale: defaults to D ** -0.5.
    impl: "auto" (the XLA path: the kernel is not faster where the cache is large;
      `AUTO_TAKES_KERNEL`), "xla", "pallas" / "pallas_gpu" (the kernel; interpret mode off
      a GPU).

  Returns:
    [B, 1, H, D] in q.dtype (zeros for a query that sees no key); scores, softmax and sums
    in float32.
  """
  def kernel_not_chosen():  # why "auto" on a GPU keeps the XLA path, or None
    if not AUTO_TAKES_KERNEL:
      return "not faster than the XLA path on the H200 at large caches"
    return decode_pallas.kernel_limits(head_dim=q.shape[-1], dtype=jnp.result_type(q, k, v))

  chosen = dispatch.resolve_impl(impl, IMPLS, xla="xla", pallas_unsupported=kernel_not_chosen)
  if chosen == "xla":
    return decode_xla.single_query_attention(q, k, v, q_positions, k_positions,
                                             window=window, scale=scale)
  if chosen != "pallas_gpu":
    raise ValueError(f"impl={impl!r} resolves to {chosen!r} here, and decode attention has "
                     f"no such kernel; use 'xla' or 'pallas_gpu'")
  return decode_pallas.single_query_attention(q, k, v, q_positions, k_positions,
                                              window=window, scale=scale)
