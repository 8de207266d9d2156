"""Launches one recorded kernel launch from its cubin, with no JAX in the process, so that
Nsight Compute can profile it (it could not attach to JAX on the H200: WORKSPACE.md, issue
11, sessions 13-14). Standalone (numpy and CuPy, which the GPU machine's image holds); the
launch is a folder that `experiments.kernel_operands` wrote.

  python3 experiments/replay_kernel.py /tmp/ops/bwd_union_kernel [--repeats=20]
  python3 experiments/replay_kernel.py /tmp/ops/fwd_gather_kernel \\
      --variant=w4=main.cubin --variant=w2=two_warps.cubin@2   # builds A/B, interleaved
  ncu --clock-control none --set full -k regex:bwd_union --launch-skip 3 --launch-count 1 \\
      python3 experiments/replay_kernel.py /tmp/ops/bwd_union_kernel

Each parameter is a device buffer holding the recorded bytes (an in-place output shares its
input's buffer, as XLA passes it), in the kernel's parameter order; two null pointers follow,
for Triton's scratch parameters where the compiler adds them (a kernel reads only the
parameters it has). The launch grid is the Pallas grid (x, y, z), 32 x num_warps threads a
program, with the dynamic shared memory XLA gives it (`shared_bytes_for`). Launches repeat on the same buffers: in-place outputs drift from launch to launch,
which changes values, not which bytes move. Other builds of the same kernel (`--variant`:
another tree's cubin with the same parameters, e.g. built here by `experiments.xla_build`)
run on the same buffers, in turn with the recorded one, so that one process compares
them launch for launch. Prints one JSON line: the kernel, grid, the operands' bytes, and
per build the median and minimum microseconds per launch (CUDA events around each).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics

import numpy as np

# Null pointers passed after the operands (Triton's global and profile scratch).
SCRATCH_PARAMS = 2
# Beside a cubin, XLA's launches of its kernel (experiments.cached_binaries.LAUNCHES_SUFFIX).
LAUNCHES_SUFFIX = ".launches.json"
# Dynamic shared memory a launch may take without raising the function's limit.
_DEFAULT_SHARED_LIMIT = 48 * 1024


def load_launch(directory: str) -> dict:
  with open(os.path.join(directory, "launch.json")) as f:
    return json.load(f)


def host_operands(launch: dict, directory: str) -> list:
  """Per parameter in order: a uint8 numpy array of its bytes (zeros for an output recorded
  without a file), or the int index of the earlier parameter whose buffer it shares."""
  operands = []
  for param in launch["params"]:
    if param.get("same_as") is not None:
      operands.append(int(param["same_as"]))
    elif param.get("file"):
      data = np.fromfile(os.path.join(directory, param["file"]), dtype=np.uint8)
      if data.size != param["nbytes"]:
        raise ValueError(f"{param['file']} holds {data.size} bytes, launch.json says "
                         f"{param['nbytes']}")
      operands.append(data)
    else:
      operands.append(np.zeros(param["nbytes"], np.uint8))
  return operands


def device_arguments(operands: list, to_device) -> tuple:
  """The kernel's arguments: each array moved by to_device, each shared parameter the same
  device buffer as the one it names, then SCRATCH_PARAMS null pointers."""
  buffers = []
  for operand in operands:
    buffers.append(buffers[operand] if isinstance(operand, int) else to_device(operand))
  return (*buffers, *([np.uint64(0)] * SCRATCH_PARAMS))


def shared_bytes_for(cubin: str, grid: list, fallback: int | None) -> int:
  """The dynamic shared memory XLA launches the cubin's kernel with on this grid: from the
  `LAUNCHES_SUFFIX` file beside the cubin (`experiments.cached_binaries` writes it; a
  Triton kernel's cubin does not say it, and a launch given less faults), else
  `fallback`. Several launches on the grid with different amounts take the largest."""
  path = cubin + LAUNCHES_SUFFIX
  if not os.path.exists(path):
    if fallback is None:
      raise ValueError(f"{path} is missing: pass --shared_bytes (the kernel's dynamic "
                       "shared memory; XLA's thunk has it, the cubin does not)")
    return fallback
  with open(path) as f:
    launches = json.load(f)
  on_grid = [launch for launch in launches if list(launch["blocks"]) == list(grid)]
  if not on_grid:
    raise ValueError(f"{path} has no launch on grid {list(grid)}: "
                     f"{[launch['blocks'] for launch in launches]}")
  return max(int(launch["shared_bytes"]) for launch in on_grid)


def parse_variant(spec: str, num_warps: int) -> tuple[str, str, int]:
  """"NAME=CUBIN[@WARPS]" -> (name, cubin path, warps; default num_warps)."""
  name, sep, rest = spec.partition("=")
  path, _, warps = rest.partition("@")
  if not sep or not name or not path or (warps and not warps.isdigit()):
    raise ValueError(f"--variant takes NAME=CUBIN[@WARPS], got {spec!r}")
  return name, path, int(warps) if warps else num_warps


def interleaved_times(launches: dict, warmup: int, repeats: int, timed_launch) -> dict:
  """{name: [microseconds of each timed launch]}: every launch in `launches` ({name: its
  launch arguments}) run `warmup` times, then `repeats` rounds of one each, in turn, so
  that drift over the process falls on all alike. timed_launch(arguments) -> us."""
  for arguments in launches.values():
    for _ in range(warmup):
      timed_launch(arguments)
  times = {name: [] for name in launches}
  for _ in range(repeats):
    for name, arguments in launches.items():
      times[name].append(timed_launch(arguments))
  return times


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("launch_dir", help="a folder experiments.kernel_operands wrote")
  parser.add_argument("--cubin", help="the kernel's cubin (default: launch.json's)")
  parser.add_argument("--variant", action="append", default=[],
                      help="NAME=CUBIN[@WARPS]: also time this build of the kernel (same "
                      "parameters; another tree's, built by experiments.xla_build) on the "
                      "same buffers, interleaved with the others; repeatable")
  parser.add_argument("--warmup", type=int, default=3)
  parser.add_argument("--repeats", type=int, default=20)
  parser.add_argument("--shared_bytes", type=int, default=None,
                      help="dynamic shared memory per program for a cubin without XLA's "
                      f"launches beside it (<cubin>{LAUNCHES_SUFFIX})")
  args = parser.parse_args()
  import cupy  # pylint: disable=g-import-not-at-top  (only the GPU machine has it)

  launch = load_launch(args.launch_dir)
  builds = [parse_variant(v, launch["num_warps"]) for v in args.variant]
  cubin = args.cubin or launch.get("cubin")
  if cubin:
    cubin = os.path.join(args.launch_dir, cubin) if not os.path.isabs(cubin) else cubin
    builds.insert(0, ("recorded", cubin, launch["num_warps"]))
  if not builds:
    raise ValueError("launch.json names no cubin (recorded without a GPU): pass --cubin "
                     "or --variant")
  operands = host_operands(launch, args.launch_dir)
  arguments = device_arguments(operands, cupy.asarray)
  grid = tuple(launch["grid"])
  launches = {}  # name: (function, warps, dynamic shared bytes)
  for name, path, warps in builds:
    function = cupy.RawModule(path=path).get_function(launch["kernel"])
    shared = shared_bytes_for(path, launch["grid"], args.shared_bytes)
    if shared > _DEFAULT_SHARED_LIMIT:
      function.max_dynamic_shared_size_bytes = shared
    launches[name] = (function, warps, shared)

  def timed_launch(function_warps_shared) -> float:
    function, warps, shared_mem = function_warps_shared
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    function(grid, (32 * warps, 1, 1), arguments, shared_mem=shared_mem)
    end.record()
    end.synchronize()
    return cupy.cuda.get_elapsed_time(start, end) * 1e3

  times = interleaved_times(launches, args.warmup, args.repeats, timed_launch)
  print(json.dumps({
      "kernel": launch["kernel"], "grid": list(grid),
      "operand_bytes": int(sum(o.size for o in operands if not isinstance(o, int))),
      "builds": {name: {
          "cubin": path, "threads": 32 * warps,
          "median_us": statistics.median(times[name]), "min_us": min(times[name]),
          "registers": getattr(launches[name][0], "num_regs", None),
          "shared_bytes": launches[name][2],
          "static_shared_bytes": getattr(launches[name][0], "shared_size_bytes", None)}
          for name, path, warps in builds}}))


if __name__ == "__main__":
  main()
