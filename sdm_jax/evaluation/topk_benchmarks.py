"""Times product-key top-k: the GPU Pallas kernel at each tiling (`topk_pallas.KernelConfig`,
interpreted off a GPU), the XLA path and a plain `lax.top_k` over the 2S scores of each row
(the issue-12 yardstick). Registered as `--op=topk` in `experiments/bench_ops.py`.
"""

from __future__ import annotations

import functools
from typing import Any, Sequence

import jax
from jax import lax
import jax.numpy as jnp

from pallas_kernels.product_key import topk_pallas
from sdm_jax.evaluation import tiling
from sdm_jax.evaluation import timing
from sdm_jax.ops import product_key_topk


def _time(fn, args, warmup, repeats) -> tuple[float, float]:
  """(median ms of waited-for calls, ms per call back to back): below a millisecond the
  first includes tens of microseconds of dispatch and waiting that the second overlaps."""
  jitted = jax.jit(fn)
  times = timing.time_call(lambda: jitted(*args), warmup=warmup, repeats=repeats)
  return times["median_ms"], times["back_to_back_ms"]


# At decode's few rows one call takes tens of microseconds, so host dispatch dominates even
# back-to-back calls (+-20 us between processes on an H100, session 60). Up to SCAN_MAX_ROWS
# rows the forwards are also timed as SCAN_STEPS calls inside one jitted `lax.scan`, as
# the SDM decode step runs them, each step on its own scores so that none is hoisted.
SCAN_STEPS = 64
SCAN_MAX_ROWS = 1024


def benchmark_shape(*, rows: int, sub_keys: int, k: int, dtype: str,
                    tilings: Sequence[str] = ("default",), warmup: int = 2,
                    repeats: int = 10) -> dict[str, Any]:
  """Median ms of forward and forward+backward of the XLA path and of the kernel at each
  tiling ("default" or "field=value;..." over `topk_pallas.KernelConfig`), the forwards
  also back to back (`*_back_to_back_ms`) and, up to SCAN_MAX_ROWS rows, per call inside a
  scan (`*_scan_ms`); each kernel's speedup over `lax.top_k` from waited-for medians
  (`speedup_over_lax_top_k`) and from back-to-back calls (`..._back_to_back`, issue 12's
  yardstick; why they differ: `_time`); whether the kernel's ids equal the XLA path's; and
  the fastest tiling (by median) among those whose ids do."""
  scores = jax.random.normal(jax.random.PRNGKey(rows + sub_keys + k),
                             (rows, 2 * sub_keys), jnp.dtype(dtype))
  cotangent = jax.random.normal(jax.random.PRNGKey(1), (rows, k), jnp.float32)
  scanned = rows <= SCAN_MAX_ROWS
  scores_by_step = jax.random.normal(jax.random.PRNGKey(2), (SCAN_STEPS, rows, 2 * sub_keys),
                                     jnp.dtype(dtype)) if scanned else None

  def scan_ms(topk):  # per call: each step's scores in one scan, the scans back to back
    steps = lambda xs: lax.scan(lambda carry, s: (carry, topk(s)), None, xs)[1]  # noqa: E731
    return _time(steps, (scores_by_step,), warmup, repeats)[1] / SCAN_STEPS

  def fwd_and_fwd_bwd(topk):  # (fwd ms, fwd back to back, fwd+bwd ms)
    loss = lambda s: jnp.sum(topk(s)[1].astype(jnp.float32) * cotangent)  # noqa: E731
    return (*_time(topk, (scores,), warmup, repeats),
            _time(jax.grad(loss), (scores,), warmup, repeats)[0])

  xla = functools.partial(product_key_topk, k=k, impl="xla")
  xla_fwd_ms, xla_back_to_back_ms, xla_fwd_bwd_ms = fwd_and_fwd_bwd(xla)
  lax_ms, lax_back_to_back_ms = _time(lambda s: lax.top_k(s, k), (scores,), warmup, repeats)
  xla_scan_ms = scan_ms(xla) if scanned else None
  xla_idx = jax.jit(xla)(scores)[0]
  kernels = []
  for spec in tilings:
    config = tiling.parse_tiling(spec, topk_pallas.default_config(sub_keys, k, rows))
    kernel = functools.partial(topk_pallas.product_key_topk, k=k, config=config)
    fwd_ms, back_to_back_ms, fwd_bwd_ms = fwd_and_fwd_bwd(kernel)
    kernels.append({"tiling": spec, **config._asdict(), "fwd_ms": fwd_ms,
                    "fwd_back_to_back_ms": back_to_back_ms, "fwd_bwd_ms": fwd_bwd_ms,
                    "speedup_over_lax_top_k": lax_ms / fwd_ms,
                    "speedup_over_lax_top_k_back_to_back":
                        lax_back_to_back_ms / back_to_back_ms,
                    "speedup_over_xla": xla_fwd_ms / fwd_ms,
                    "same_ids_as_xla": bool(jnp.array_equal(jax.jit(kernel)(scores)[0],
                                                            xla_idx))})
    if scanned:
      kernels[-1]["fwd_scan_ms"] = scan_ms(kernel)
  correct = [kernel for kernel in kernels if kernel["same_ids_as_xla"]]
  result = {"rows": rows, "sub_keys": sub_keys, "k": k, "dtype": jnp.dtype(dtype).name,
            "xla_fwd_ms": xla_fwd_ms, "xla_fwd_back_to_back_ms": xla_back_to_back_ms,
            "xla_fwd_bwd_ms": xla_fwd_bwd_ms, "lax_top_k_2s_fwd_ms": lax_ms,
            "lax_top_k_2s_back_to_back_ms": lax_back_to_back_ms, "pallas_gpu": kernels,
            "fastest_tiling": min(correct, key=lambda kernel: kernel["fwd_ms"])["tiling"]
            if correct else None}
  if scanned:
    result["xla_fwd_scan_ms"] = xla_scan_ms
  return result


def benchmark(*, rows: list[int], sub_keys: list[int], ks: list[int], dtype: str,
              tilings: Sequence[str] = ("default",), warmup: int = 2,
              repeats: int = 10) -> dict[str, Any]:
  """Every (rows, S, k) combination with k <= S * S."""
  results = [benchmark_shape(rows=r, sub_keys=s, k=k, dtype=dtype, tilings=tilings,
                             warmup=warmup, repeats=repeats)
             for r in rows for s in sub_keys for k in ks if k <= s * s]
  return {"results": results}
