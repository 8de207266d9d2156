"""Launches one recorded kernel launch from its cubin, with no JAX in the process, so that
Nsight Compute can profile it (it could not attach to JAX on the H200: WORKSPACE.md, issue
11, sessions 13-14). Standalone (numpy and CuPy, which the GPU machine's image holds); the
launch is a folder that `experiments.kernel_operands` wrote.

  python3 experiments/replay_kernel.py /tmp/ops/bwd_union_kernel [--repeats=20]
  ncu --clock-control none --set full -k regex:bwd_union --launch-skip 3 --launch-count 1 \\
      python3 experiments/replay_kernel.py /tmp/ops/bwd_union_kernel

Each parameter is a device buffer holding the recorded bytes (an in-place output shares its
input's buffer, as XLA passes it), in the kernel's parameter order; two null pointers follow,
for Triton's scratch parameters where the compiler adds them (a kernel reads only the
parameters it has). The launch grid is the Pallas grid (x, y, z), 32 x num_warps threads a
program. Launches repeat on the same buffers: in-place outputs drift from launch to launch,
which changes values, not which bytes move. Prints one JSON line: the kernel, grid, median
and minimum microseconds per launch (CUDA events around each), and the operands' bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics

import numpy as np

# Null pointers passed after the operands (Triton's global and profile scratch).
SCRATCH_PARAMS = 2


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


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("launch_dir", help="a folder experiments.kernel_operands wrote")
  parser.add_argument("--cubin", help="the kernel's cubin (default: launch.json's)")
  parser.add_argument("--warmup", type=int, default=3)
  parser.add_argument("--repeats", type=int, default=20)
  parser.add_argument("--shared_bytes", type=int, default=0,
                      help="dynamic shared memory per program (XLA's Triton kernels seen so "
                      "far declare theirs statically)")
  args = parser.parse_args()
  import cupy  # pylint: disable=g-import-not-at-top  (only the GPU machine has it)

  launch = load_launch(args.launch_dir)
  cubin = args.cubin or launch.get("cubin")
  if not cubin:
    raise ValueError("launch.json names no cubin (recorded without a GPU): pass --cubin")
  cubin = os.path.join(args.launch_dir, cubin) if not os.path.isabs(cubin) else cubin
  function = cupy.RawModule(path=cubin).get_function(launch["kernel"])
  operands = host_operands(launch, args.launch_dir)
  arguments = device_arguments(operands, cupy.asarray)
  grid, block = tuple(launch["grid"]), (32 * launch["num_warps"], 1, 1)
  times = []
  for index in range(args.warmup + args.repeats):
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    function(grid, block, arguments, shared_mem=args.shared_bytes)
    end.record()
    end.synchronize()
    if index >= args.warmup:
      times.append(cupy.cuda.get_elapsed_time(start, end) * 1e3)
  print(json.dumps({
      "kernel": launch["kernel"], "grid": list(grid), "threads": block[0],
      "median_us": statistics.median(times), "min_us": min(times),
      "operand_bytes": int(sum(o.size for o in operands if not isinstance(o, int))),
      # What the cubin declares: if a kernel's shared memory were dynamic (static 0), the
      # launch would need --shared_bytes.
      "registers": getattr(function, "num_regs", None),
      "static_shared_bytes": getattr(function, "shared_size_bytes", None)}))


if __name__ == "__main__":
  main()
