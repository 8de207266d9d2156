"""Times product-key top-k: the Pallas kernel, the XLA path and a plain `lax.top_k` over
the 2S scores of each row (the issue-12 yardstick). Registered as `--op=topk` in
`experiments/bench_ops.py`.
"""

from __future__ import annotations

from typing import Any

import jax
from jax import lax
import jax.numpy as jnp

from sdm_jax.evaluation import timing
from sdm_jax.ops import product_key_topk


def _time(fn, args, warmup, repeats) -> float:
  jitted = jax.jit(fn)
  return timing.time_call(lambda: jitted(*args), warmup=warmup, repeats=repeats)[
      "median_ms"]


def benchmark_shape(*, rows: int, sub_keys: int, k: int, dtype: str, warmup: int = 2,
                    repeats: int = 10) -> dict[str, Any]:
  """Median ms of forward and forward+backward for each implementation at one shape."""
  scores = jax.random.normal(jax.random.PRNGKey(rows + sub_keys + k),
                             (rows, 2 * sub_keys), jnp.dtype(dtype))
  cotangent = jax.random.normal(jax.random.PRNGKey(1), (rows, k), jnp.float32)
  result: dict[str, Any] = {"rows": rows, "sub_keys": sub_keys, "k": k,
                            "dtype": jnp.dtype(dtype).name}
  for impl in ("pallas", "xla"):
    topk = lambda s, impl=impl: product_key_topk(s, k, impl=impl)  # noqa: E731
    loss = lambda s, topk=topk: jnp.sum(  # noqa: E731
        topk(s)[1].astype(jnp.float32) * cotangent)
    result[f"{impl}_fwd_ms"] = _time(topk, (scores,), warmup, repeats)
    result[f"{impl}_fwd_bwd_ms"] = _time(jax.grad(loss), (scores,), warmup, repeats)
  result["lax_top_k_2s_fwd_ms"] = _time(lambda s: lax.top_k(s, k), (scores,), warmup, repeats)
  result["pallas_speedup_over_lax_top_k"] = (result["lax_top_k_2s_fwd_ms"]
                                             / result["pallas_fwd_ms"])
  return result


def benchmark(*, rows: list[int], sub_keys: list[int], ks: list[int], dtype: str,
              warmup: int = 2, repeats: int = 10) -> dict[str, Any]:
  """Every (rows, S, k) combination with k <= S * S."""
  results = [benchmark_shape(rows=r, sub_keys=s, k=k, dtype=dtype, warmup=warmup,
                             repeats=repeats)
             for r in rows for s in sub_keys for k in ks if k <= s * s]
  return {"results": results}
