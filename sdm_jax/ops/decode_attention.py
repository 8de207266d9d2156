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
# "auto" takes the kernel on a GPU only where it is faster than the XLA path: caches of at
# most this many slots over the batch (B x L). Timed on the H200 (d = 2048, 16 heads, bf16,
# per step in a scan; WORKSPACE.md, "Decode step", session 18): kernel / XLA 0.069 / 0.076,
# 0.120 / 0.137, 0.325 / 0.358 ms at B = 1 and 8K / 32K / 128K, 0.180 / 0.207 and 0.587 /
# 0.659 at B = 8 and 8K / 32K, but 2.231 / 2.121 at B = 8 and 128K (B x L = 1M), where XLA
# already reads the cache at about 4 TB/s.
AUTO_KERNEL_MAX_CACHE_SLOTS = 262_144


def auto_kernel_problem(q: jax.Array, k: jax.Array, v: jax.Array) -> str | None:
  """Why "auto" on a GPU keeps the XLA path for these operands, or None (it takes the
  kernel)."""
  batch, cache_len = k.shape[:2]
  if batch * cache_len > AUTO_KERNEL_MAX_CACHE_SLOTS:
    return (f"B x L = {batch * cache_len} > {AUTO_KERNEL_MAX_CACHE_SLOTS} cache slots: the "
            f"XLA path was as fast on the H200")
  return decode_pallas.kernel_limits(head_dim=q.shape[-1], dtype=jnp.result_type(q, k, v))


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
    impl: "auto" (on a GPU the kernel for caches of at most `AUTO_KERNEL_MAX_CACHE_SLOTS`
      slots over the batch, else the XLA path), "xla", "pallas" / "pallas_gpu" (the kernel;
      interpret mode off a GPU).

  Returns:
    [B, 1, H, D] in q.dtype (zeros for a query that sees no key); scores, softmax and sums
    in float32.
  """
  if resolved_impl(impl, q, k, v) == "xla":
    return decode_xla.single_query_attention(q, k, v, q_positions, k_positions,
                                             window=window, scale=scale)
  return decode_pallas.single_query_attention(q, k, v, q_positions, k_positions,
                                              window=window, scale=scale)


def resolved_impl(impl: str, q: jax.Array, k: jax.Array, v: jax.Array) -> str:
  """What `impl` runs for a query q [B, 1, H, D] over a cache k, v [B, L, H, D]: "xla" or
  "pallas_gpu" (the rule of `single_query_attention`'s `impl`)."""
  chosen = dispatch.resolve_impl(impl, IMPLS, xla="xla",
                                 pallas_unsupported=lambda: auto_kernel_problem(q, k, v))
  if chosen not in ("xla", "pallas_gpu"):
    raise ValueError(f"impl={impl!r} resolves to {chosen!r} here, and decode attention has "
                     f"no such kernel; use 'xla' or 'pallas_gpu'")
  return chosen


# The `A` / `S` decode step as one GPU kernel (norm, rotary, cache write, attention), which
# the layer takes where `resolved_impl` gives "pallas_gpu"; its reference is the layer's
# own path (norm, rotary, `write_cache`, `single_query_attention`).
append_and_attend = decode_pallas.append_and_attend
