"""Times the products of a decode step's few rows with its weight matrices: XLA's dots (as
the layers issue them, rows padded to `decode_rows.MIN_ROWS`) and the skinny-matmul kernel
at each tiling (`skinny_pallas.KernelConfig`, interpreted off a GPU), by the device time of
their ops (a profiler trace: dispatch stays out; None where the backend records no device
ops, as on CPU) and the weight bytes read per second, beside the wall time per call.
Registered as `--op=skinny_matmul` in `experiments/bench_ops.py`.
"""

from __future__ import annotations

from typing import Any, Sequence

import jax
import jax.numpy as jnp

from pallas_kernels.matmul import skinny_pallas
from sdm_jax.evaluation import tiling
from sdm_jax.evaluation import timing
from sdm_jax.layers.decode_rows import pad_rows


def _xla_dots(x, weights):
  """What a layer's projections issue: one dot per matrix, side by side, on padded rows."""
  rows = pad_rows(x)
  return jnp.concatenate([rows @ w for w in weights], axis=-1)[:x.shape[0]]


def benchmark(*, rows: Sequence[int], depth: int, widths: Sequence[Sequence[int]],
              dtype: str, tilings: Sequence[str] = ("default",), repeats: int = 20
              ) -> dict[str, Any]:
  """Per (M, matrices): device us (and wall us) per call of XLA's dots and of the kernel at
  each tiling ("default" or "field=value;..." over `skinny_pallas.KernelConfig`), with the
  weights' GB/s and each kernel's largest difference from XLA's output."""
  results = []
  for width_set in widths:
    keys = jax.random.split(jax.random.PRNGKey(len(width_set)), len(width_set) + 1)
    weights = [jax.random.normal(key, (depth, width), jnp.dtype(dtype)) / depth ** 0.5
               for key, width in zip(keys[1:], width_set)]
    weight_bytes = sum(w.size * w.dtype.itemsize for w in weights)
    for m in rows:
      x = jax.random.normal(keys[0], (m, depth), jnp.dtype(dtype))

      def measure(fn, x=x):
        jitted = jax.jit(fn)
        call = lambda: jitted(x, weights)  # noqa: E731
        wall_us = 1e3 * timing.time_call(call, warmup=1, repeats=repeats)["median_ms"]
        ops = timing.device_time_by_op(call, repeats=repeats, top=50)
        device_us = 1e3 * sum(op["ms"] for op in ops) if ops else None
        return {"us": device_us, "ops": len(ops), "wall_us": wall_us,
                "gb_per_s": weight_bytes / device_us / 1e3 if ops else None}, call()

      xla, want = measure(_xla_dots)
      row = {"rows": m, "depth": depth, "widths": list(width_set), "weight_bytes": weight_bytes,
             **{f"xla_{key}": value for key, value in xla.items()}, "kernel": []}
      for spec in tilings:
        config = tiling.parse_tiling(spec, skinny_pallas.KernelConfig())
        kernel, got = measure(
            lambda x, w, config=config: skinny_pallas.skinny_matmul(x, w, config=config))
        error = float(jnp.max(jnp.abs(got.astype(jnp.float32) - want.astype(jnp.float32))))
        row["kernel"].append({
            "tiling": spec, "block_n": skinny_pallas.column_block(width_set, config), **kernel,
            "speedup_over_xla": xla["us"] / kernel["us"] if kernel["us"] else None,
            "max_abs_difference": error})
      results.append(row)
  return {"dtype": jnp.dtype(dtype).name, "results": results}
