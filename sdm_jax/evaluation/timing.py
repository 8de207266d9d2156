"""Timing helpers shared by the benchmark entry points.

Timings are medians over repeated calls after warm-up, each call ended with
`jax.block_until_ready`, so compilation and dispatch queues stay out of the numbers.
"""

from __future__ import annotations

import glob
import re
import statistics
import tempfile
import time
from typing import Any, Callable, Iterable

import jax


def time_call(fn: Callable[[], Any], *, warmup: int = 2, repeats: int = 10,
              sync: Callable[[Any], Any] = jax.block_until_ready) -> dict[str, float]:
  """Times `fn()` (already jitted, closed over its inputs); returns milliseconds.

  Returns {"median_ms", "min_ms", "max_ms"} over `repeats` calls after `warmup` calls, each
  waited for with `sync(fn())`: what one call costs a caller who waits for it, host dispatch
  included; and "back_to_back_ms": `repeats` calls issued without waiting, then one wait,
  divided by `repeats`: what a call costs in a stream of calls (a training loop), where
  dispatch overlaps the device's work. `sync` lets peers in other frameworks be timed the
  same way (PyTorch: `lambda _: torch.cuda.synchronize()`).
  """
  if repeats < 1:
    raise ValueError(f"repeats must be >= 1, got {repeats}")
  for _ in range(warmup):
    sync(fn())
  samples = []
  for _ in range(repeats):
    start = time.perf_counter()
    sync(fn())
    samples.append((time.perf_counter() - start) * 1e3)
  start = time.perf_counter()
  for _ in range(repeats):
    # Drop the previous result before the next call allocates its own, so that one call's
    # outputs are live at a time, as in the waited-for calls: with two, a benchmark's peak
    # memory counted a second set of outputs (2.3 GB more at SDM layer A, whose gradients
    # w.r.t. 554M parameters are 2.2 GB; WORKSPACE.md, session 23). Device buffers are
    # freed in stream order, so this does not wait.
    result = None
    result = fn()
  sync(result)
  back_to_back = (time.perf_counter() - start) * 1e3 / repeats
  return {
      "median_ms": statistics.median(samples),
      "min_ms": min(samples),
      "max_ms": max(samples),
      "back_to_back_ms": back_to_back,
  }


def peak_memory_bytes(devices=None) -> int | None:
  """Peak bytes in use since start-up on the first device, or the largest peak among
  `devices`, where the backend reports it (None where it does not, e.g. on CPU)."""
  peaks = [(device.memory_stats() or {}).get("peak_bytes_in_use")
           for device in (devices or jax.devices()[:1])]
  return None if None in peaks else max(peaks)


def compiled_temp_bytes(compiled: jax.stages.Compiled) -> int | None:
  """Bytes of temporaries plus outputs XLA plans for a compiled program
  (`jax.jit(f).lower(*args).compile()`; no run needed)."""
  try:
    analysis = compiled.memory_analysis()
  except Exception:  # Some backends do not implement the analysis.
    return None
  if analysis is None:
    return None
  return int(analysis.temp_size_in_bytes + analysis.output_size_in_bytes)


# An instruction of an optimized HLO module's text with the JAX op name in its metadata.
_HLO_INSTRUCTION = re.compile(r'^\s*(?:ROOT\s+)?%([\w.\-]+) = .*?metadata=\{op_name="([^"]*)"',
                              re.MULTILINE)


def gpu_kernel_name(instruction: str) -> str:
  """The name of the GPU kernel XLA emits for an HLO instruction: "." and "-" as "_"."""
  return re.sub(r"[.\-]", "_", instruction)


def hlo_op_names(hlo_text: str) -> dict[str, str]:
  """{instruction: its JAX op name (name stack)} of an optimized HLO module's text
  (`jax.jit(f).lower(...).compile().as_text()`), each instruction also under its name with
  "." and "-" as "_": the name of the GPU kernel XLA emits for a fusion."""
  names = {}
  for instruction, op_name in _HLO_INSTRUCTION.findall(hlo_text):
    names[instruction] = op_name
    names.setdefault(gpu_kernel_name(instruction), op_name)
  return names


def device_time_by_op(fn: Callable[[], Any], *, repeats: int = 3, top: int = 20,
                      hlo_text: str | None = None) -> list[dict[str, Any]]:
  """Where `fn()`'s device time goes: a profiler trace of `repeats` calls, summed per XLA op.

  Returns up to `top` rows {"op", "ms" (per call), "count" (per call), "share", "source"}
  sorted by time; "share" is of the device time the trace saw, "source" the op's JAX name
  stack where the profiler records it, else (given the compiled program's `hlo_text`) the
  op name in the HLO metadata of the instruction the op runs (`hlo_op_names`). `fn` should
  be compiled and warm. Empty where the backend records no device ops (CPU records host
  threads only).
  """
  jax.block_until_ready(fn())
  with tempfile.TemporaryDirectory() as log_dir:
    with jax.profiler.trace(log_dir):
      for _ in range(repeats):
        jax.block_until_ready(fn())
    paths = glob.glob(f"{log_dir}/**/*.xplane.pb", recursive=True)
    profile = jax.profiler.ProfileData.from_file(paths[0]) if paths else None
  return summarize_device_ops(profile.planes if profile else (), repeats=repeats, top=top,
                              hlo_names=hlo_op_names(hlo_text) if hlo_text else None)


def _source(event_name: str, stats: dict, hlo_names: dict[str, str] | None) -> str:
  """An op's JAX name stack: the profiler's ("name" on GPU, "jit(f)/.../dot_general";
  "tf_op" elsewhere) unless it only names the module ("XlaModule:..."), then the HLO
  metadata of the instruction (the "hlo_op" stat, else the op's own name)."""
  stack = str(stats.get("name") or stats.get("tf_op") or "")
  if hlo_names and (not stack or stack.startswith("XlaModule")):
    for key in (stats.get("hlo_op"), event_name):
      if key and str(key) in hlo_names:
        return hlo_names[str(key)]
  return stack


def summarize_device_ops(planes, *, repeats: int, top: int,
                         hlo_names: dict[str, str] | None = None) -> list[dict[str, Any]]:
  """The rows of `device_time_by_op` from a profile's planes (`ProfileData.planes`: each
  with .name and .lines; lines with .name and .events; events with .name, .duration_ns
  and .stats, (key, value) pairs); hlo_names: `hlo_op_names` of the program, for the
  sources the profiler leaves at the module's name."""
  # Per-op events live on a device plane's "XLA Ops" line; where a version names lines
  # differently, the stream lines (one event per kernel) stand in.
  device_lines = [line for plane in planes
                  if plane.name.startswith("/device:") for line in plane.lines]
  op_lines = [line for line in device_lines if line.name == "XLA Ops"] or [
      line for line in device_lines if line.name.startswith("Stream")]
  durations = []
  sources: dict[str, str] = {}
  for line in op_lines:
    for event in line.events:
      durations.append((event.name, event.duration_ns / 1e6))
      if event.name not in sources:
        sources[event.name] = _source(event.name, dict(event.stats), hlo_names)[-160:]
  return [{**row, "source": sources[row["op"]]}
          for row in ranked_ops(durations, repeats=repeats, top=top)]


def ranked_ops(durations: Iterable[tuple[str, float]], *, repeats: int, top: int
               ) -> list[dict[str, Any]]:
  """(op name, ms) of every op run in `repeats` calls -> up to `top` rows {"op", "ms" and
  "count" (per call), "share" (of all the ops' time)}, costliest first: the rows of
  `device_time_by_op` (and of the PyTorch peers' kernel profiles) without their sources."""
  totals: dict[str, list[float]] = {}
  for name, ms in durations:
    entry = totals.setdefault(name, [0.0, 0])
    entry[0] += ms
    entry[1] += 1
  device_ms = sum(ms for ms, _ in totals.values()) or 1.0
  rows = sorted(totals.items(), key=lambda item: -item[1][0])[:top]
  return [{"op": name, "ms": ms / repeats, "count": count / repeats, "share": ms / device_ms}
          for name, (ms, count) in rows]
