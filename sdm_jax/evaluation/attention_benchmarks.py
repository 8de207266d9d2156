"""Times single-query (decode) attention over a cache: the XLA path and the split-cache
Pallas kernel at each tiling (`decode_pallas.KernelConfig`, interpreted off a GPU), with the
cache bytes read per second. Registered as `--op=decode_attention` in
`experiments/bench_ops.py`.
"""

from __future__ import annotations

import functools
from typing import Any, Sequence

import jax
import jax.numpy as jnp

from pallas_kernels.attention import decode_pallas
from pallas_kernels.attention import decode_xla
from sdm_jax.evaluation import tiling
from sdm_jax.evaluation import timing


def benchmark(*, batch: int, cache_len: int, heads: int, head_dim: int, dtype: str,
              window: int | None = None, tilings: Sequence[str] = ("default",),
              warmup: int = 2, repeats: int = 10) -> dict[str, Any]:
  """Median ms of one decode step's attention (q [B, 1, H, D] over a full cache k, v
  [B, L, H, D]) for the XLA path and the kernel at each tiling ("default" or
  "field=value;..." over `decode_pallas.KernelConfig`), with each one's largest difference
  from the XLA output."""
  keys = jax.random.split(jax.random.PRNGKey(0), 3)
  q = jax.random.normal(keys[0], (batch, 1, heads, head_dim), jnp.dtype(dtype))
  k = jax.random.normal(keys[1], (batch, cache_len, heads, head_dim), jnp.dtype(dtype))
  v = jax.random.normal(keys[2], (batch, cache_len, heads, head_dim), jnp.dtype(dtype))
  k_positions = jnp.broadcast_to(jnp.arange(cache_len, dtype=jnp.int32), (batch, cache_len))
  q_positions = jnp.full((batch, 1), cache_len - 1, jnp.int32)
  args = (q, k, v, q_positions, k_positions)
  cache_bytes = 2 * k.size * k.dtype.itemsize

  def measure(attend):
    jitted = jax.jit(functools.partial(attend, window=window))
    ms = timing.time_call(lambda: jitted(*args), warmup=warmup, repeats=repeats)["median_ms"]
    return ms, jitted(*args)

  xla_ms, want = measure(decode_xla.single_query_attention)
  kernels = []
  for spec in tilings:
    config = tiling.parse_tiling(spec, decode_pallas.KernelConfig())
    ms, got = measure(functools.partial(decode_pallas.single_query_attention, config=config))
    error = float(jnp.max(jnp.abs(got.astype(jnp.float32) - want.astype(jnp.float32))))
    kernels.append({"tiling": spec, **config._asdict(), "ms": ms,
                    "cache_gb_per_s": cache_bytes / ms / 1e6, "speedup_over_xla": xla_ms / ms,
                    "max_abs_difference": error})
  return {"batch": batch, "cache_len": cache_len, "heads": heads, "head_dim": head_dim,
          "dtype": jnp.dtype(dtype).name, "window": window, "cache_bytes": cache_bytes,
          "xla_ms": xla_ms, "xla_cache_gb_per_s": cache_bytes / xla_ms / 1e6,
          "pallas_gpu": kernels}
