"""Timing helpers shared by the benchmark entry points.

Timings are medians over repeated calls after warm-up, each call ended with
`jax.block_until_ready`, so compilation and dispatch queues stay out of the numbers.
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable

import jax


def time_call(fn: Callable[[], Any], *, warmup: int = 2, repeats: int = 10) -> dict[str, float]:
  """Times `fn()` (already jitted, closed over its inputs); returns milliseconds.

  Returns {"median_ms", "min_ms", "max_ms"} over `repeats` calls after `warmup` calls.
  """
  if repeats < 1:
    raise ValueError(f"repeats must be >= 1, got {repeats}")
  for _ in range(warmup):
    jax.block_until_ready(fn())
  samples = []
  for _ in range(repeats):
    start = time.perf_counter()
    jax.block_until_ready(fn())
    samples.append((time.perf_counter() - start) * 1e3)
  return {
      "median_ms": statistics.median(samples),
      "min_ms": min(samples),
      "max_ms": max(samples),
  }


def peak_memory_bytes() -> int | None:
  """Peak bytes in use on the first device since start-up, where the backend reports it."""
  stats = jax.devices()[0].memory_stats()
  if not stats:
    return None
  return stats.get("peak_bytes_in_use")


def compiled_temp_bytes(jitted: Callable[..., Any], *args) -> int | None:
  """Bytes of temporaries plus outputs XLA plans for `jitted(*args)` (no run needed)."""
  try:
    analysis = jitted.lower(*args).compile().memory_analysis()
  except Exception:  # Some backends do not implement the analysis.
    return None
  if analysis is None:
    return None
  return int(analysis.temp_size_in_bytes + analysis.output_size_in_bytes)
