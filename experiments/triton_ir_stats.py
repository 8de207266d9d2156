"""Compiles Triton IR files for sm_90 without a GPU and reports what each kernel costs.

  /path/to/triton-venv/bin/python experiments/triton_ir_stats.py DIR [--num_warps=4]

Standalone: needs only Triton (the version the GPU machine's JAX uses, e.g. `pip install
triton==3.6.0` in its own environment) and reads every `*.ttir` in DIR, such as
`experiments/triton_ir.py` writes. Per kernel: registers per thread and spill bytes (the
bundled `ptxas -v`), shared memory, SASS instruction count (`nvdisasm`), how many
programs fit on one H100/H200 multiprocessor at once (65,536 registers, 228 KB of shared
memory, 64 warps, 32 programs): for latency-bound gathers that residency is what hides the
loads; and the instructions of each loop body (a backward branch's span), so that instructions
issued per program = the count outside the loops + each body times its trips (the trips
are the kernel's own: rounds, chunks, blocks). A static estimate, not a timing. Each
kernel compiles with the warps and pipeline stages its pallas_call asked for, from
DIR/launch.json (written by triton_ir.py), else the flags.

The Triton that pip installs need not compile a kernel as XLA's own Triton does on the GPU
(session 30: a change that this tool saw cut the row gathers' instructions 3-4x left the
H200's step time unchanged). So DIR may also hold `*.cubin` files, such as
`experiments/cached_binaries.py` pulls from a JAX compilation cache on the GPU: each
function in them is reported the same way (registers and warps as compiled; shared
memory: the cubin's static figure, which is not what Triton asks for at launch), so the
code that ran can be read without a GPU.

Which pipe issues what (`--pipes`, `--mix`): per loop body, and for one program weighted by
trips over address ranges read from `--listings`, the instructions on each of a Hopper
scheduler's pipes and the cycles they hold it (`CYCLES_PER_INSTRUCTION`). For XLA's build of
the product-key top-k (session 37) that showed the ALU pipe's integer compares, selects
and min/max as the bound, not the instruction count:

  python experiments/triton_ir_stats.py bin --functions=topk --listings=/tmp/sass
  python experiments/triton_ir_stats.py bin --functions=topk --mix=0:3f40:1,3f50:4a50:16,...

Where the registers go (`--live`): `nvdisasm -plr` counts the registers live at each
instruction; per kernel, the peak and where it is (inside which loop body, or between
them), and each loop body's own peak. XLA's cubins on JAX 0.11.2 need a newer nvdisasm
than Triton 3.6 bundles (12.8 cannot analyse their ELF): `pip install nvidia-cuda-nvdisasm`
in the Triton environment and pass its binary, e.g. `--live=.../nvidia/cu13/bin/nvdisasm`
(session 43: the exact frontier's peak, 112 live of 119 allocated, is in the candidates'
formation, between the halves' rounds and the final rounds).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import subprocess
import tempfile

REGISTERS_PER_SM = 65536
SHARED_BYTES_PER_SM = 228 * 1024
WARPS_PER_SM = 64
BLOCKS_PER_SM = 32  # resident thread blocks (programs) per multiprocessor, compute capability 9.0


def _strip_locations(text: str) -> str:
  """Pallas' debug print carries source locations Triton's parser rejects."""
  text = re.sub(r" \[unknown\]", "", text)
  text = re.sub(r'\s+"[^"\n]*"\(#loc\d*\)', "", text)
  text = re.sub(r"\s*loc\(#loc\d*\)", "", text)
  return "\n".join(line for line in text.splitlines() if not line.startswith("#loc"))


def programs_per_sm(registers: int, shared: int, num_warps: int) -> int:
  """Resident programs per multiprocessor (registers allocated per warp in units of 256)."""
  per_warp = -(-registers * 32 // 256) * 256
  by_registers = REGISTERS_PER_SM // (per_warp * num_warps)
  by_shared = SHARED_BYTES_PER_SM // shared if shared else by_registers
  return min(by_registers, by_shared, WARPS_PER_SM // num_warps, BLOCKS_PER_SM)


_INSTRUCTION = re.compile(r"^\s+/\*[0-9a-f]{4,}\*/", re.M)  # an `nvdisasm -c` line


def _nvidia_tool(name: str) -> str:
  """The path of one of the NVIDIA binaries bundled with Triton (ptxas, nvdisasm, ...)."""
  import triton  # pylint: disable=g-import-not-at-top
  return os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", name)


def _stats(kernel: str, num_warps: int, registers: int, spill_bytes: int, shared: int,
           sass: str) -> dict:
  """One kernel's report (what `kernel_stats` and `cubin_stats` return)."""
  return {"kernel": kernel, "num_warps": num_warps, "registers": registers,
          "spill_bytes": spill_bytes, "shared_bytes": shared,
          "instructions": len(_INSTRUCTION.findall(sass)),
          "programs_per_sm": programs_per_sm(registers, shared, num_warps),
          "loop_bodies": loop_bodies(sass), "loop_pipes": loop_pipes(sass), "sass": sass}


# Warp instructions a Hopper scheduler (a quarter of a multiprocessor) issues per cycle, as
# cycles each holds its pipe, from NVIDIA's throughput table for compute capability 9.0:
# 64 integer compare/select/min/max/logic and 64 integer multiply-add results per clock per
# multiprocessor (16 lanes a scheduler: 2 cycles a warp), 32 shuffle results (4 cycles).
# Memory and control are counted, not timed.
CYCLES_PER_INSTRUCTION = {"alu": 2, "fma": 2, "shfl": 4, "mem": 1, "other": 1}
_FMA_PIPE = ("IMAD", "IMUL", "FFMA", "FADD", "FMUL", "HFMA2", "HADD2", "HMUL2")
_MEMORY_PIPE = ("LDG", "STG", "LDS", "STS", "LDC", "LDSM", "STSM", "LDL", "STL", "LD", "ST",
                "ATOM", "ATOMS", "ATOMG", "RED")
_OTHER = ("BRA", "BSSY", "BSYNC", "EXIT", "WARPSYNC", "BAR", "NOP", "ENDCOLLECTIVE", "S2R",
          "CS2R", "MEMBAR", "DEPBAR", "ACQBULK", "CCTL", "ERRBAR", "RET", "CALL", "YIELD")


def pipe_of(opcode: str) -> str:
  """"alu", "fma", "shfl", "mem" or "other" (control, and the uniform datapath's U*
  instructions, which run beside the vector pipes) for an opcode such as "ISETP"."""
  if opcode == "SHFL":
    return "shfl"
  if opcode in _FMA_PIPE:
    return "fma"
  if opcode in _MEMORY_PIPE:
    return "mem"
  if opcode in _OTHER or opcode.startswith("U") or opcode in ("VOTE", "S2UR"):
    return "other"
  return "alu"


_OPCODE = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P[T\d]+\s+)?([A-Z][A-Z0-9_]*)")


def instruction_pipes(sass: str) -> list[tuple[int, str]]:
  """(address, pipe) of each instruction of an `nvdisasm -c` listing, in order."""
  return [(int(m.group(1), 16), pipe_of(m.group(2)))
          for m in map(_OPCODE.match, sass.splitlines()) if m]


def pipe_mix(sass: str, ranges) -> dict:
  """Instructions per pipe that one program issues, with each address range (lo, hi,
  trips), ends included, counted `trips` times (a loop body: its trips; a branch's body: how
  often it runs, a mean is fine), and "cycles": per pipe, the cycles those hold a scheduler
  (`CYCLES_PER_INSTRUCTION`)."""
  counts = dict.fromkeys(CYCLES_PER_INSTRUCTION, 0.0)
  for address, pipe in instruction_pipes(sass):
    counts[pipe] += sum(trips for lo, hi, trips in ranges if lo <= address <= hi)
  counts["cycles"] = {pipe: count * CYCLES_PER_INSTRUCTION[pipe]
                      for pipe, count in counts.items()}
  return counts


def _listing(sass: str) -> tuple[dict, list]:
  """An `nvdisasm -c` listing -> ({label: index of the instruction after it}, instructions)."""
  labels, instructions = {}, []
  for line in sass.splitlines():
    label = re.match(r"^\s*(\.L_x_\d+):", line)
    if label:
      labels[label.group(1)] = len(instructions)
      continue
    if _INSTRUCTION.match(line):
      instructions.append(line)
  return labels, instructions


def _loop_spans(sass: str) -> tuple[list[str], list[tuple[int, int]]]:
  """The listing's instructions and each loop body's (first, last) index in them: from a
  label to a branch back to it (nested loops are listed each whole)."""
  labels, instructions = _listing(sass)
  spans = []
  for end, line in enumerate(instructions):
    target = re.search(r"BRA\b.*`\((\.L_x_\d+)\)", line)
    start = labels.get(target.group(1)) if target else None
    if start is not None and start < end:  # a jump to itself is the kernel's final spin
      spans.append((start, end))
  return instructions, spans


def loop_bodies(sass: str) -> list[int]:
  """Instructions of each loop body in an `nvdisasm -c` listing, in program order: from a
  label to a branch back to it, both included (nested loops are listed each whole)."""
  return [end - start + 1 for start, end in _loop_spans(sass)[1]]


def loop_pipes(sass: str) -> list[dict]:
  """Per loop body (as `loop_bodies`), its instructions per pipe (`pipe_of`)."""
  instructions, spans = _loop_spans(sass)
  pipes = [pipe for _, pipe in instruction_pipes("\n".join(instructions))]
  return [{pipe: pipes[start:end + 1].count(pipe) for pipe in CYCLES_PER_INSTRUCTION}
          for start, end in spans]


_LIVE = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/.*//\s*\|\s*(\d+)\s*\|")


def live_registers(sass: str) -> dict:
  """From an `nvdisasm -c -plr -lrm count` listing: "peak", the most general registers live
  at one instruction; "peak_at", the (first, last) address of the instructions within 4 of
  it, coalesced into ranges; "loops", per loop body (`_loop_spans`) its (first address,
  last address, peak)."""
  instructions, spans = _loop_spans(sass)
  live = [(int(m.group(1), 16), int(m.group(2))) for m in map(_LIVE.match, instructions) if m]
  if len(live) != len(instructions):
    raise ValueError("not a listing with life ranges (nvdisasm -plr -lrm count)")
  peak = max(count for _, count in live)
  peak_at = []
  for index, (address, count) in enumerate(live):
    if count >= peak - 4:
      if peak_at and peak_at[-1][2] == index - 1:
        peak_at[-1][1:] = [address, index]
      else:
        peak_at.append([address, address, index])
  return {"peak": peak, "peak_at": [(lo, hi) for lo, hi, _ in peak_at],
          "loops": [(live[start][0], live[end][0], max(c for _, c in live[start:end + 1]))
                    for start, end in spans]}


def _live_line(report: dict) -> str:
  where = ", ".join(f"{lo:05x}-{hi:05x}" for lo, hi in report["peak_at"][:6])
  loops = ", ".join(f"{lo:05x}-{hi:05x} {peak}" for lo, hi, peak in report["loops"])
  return f"  live registers: peak {report['peak']} at {where}; loop bodies' peaks: {loops or '-'}"


def kernel_stats(path: str, num_warps: int, num_stages: int = 1) -> dict:
  import triton  # pylint: disable=g-import-not-at-top
  from triton.backends.compiler import GPUTarget  # pylint: disable=g-import-not-at-top
  with tempfile.TemporaryDirectory() as scratch:
    source = os.path.join(scratch, "kernel.ttir")
    with open(path) as f, open(source, "w") as out:
      out.write(_strip_locations(f.read()))
    kernel = triton.compile(source, target=GPUTarget("cuda", 90, 32),
                            options={"num_warps": num_warps, "num_stages": num_stages})
    ptx, cubin = os.path.join(scratch, "k.ptx"), os.path.join(scratch, "k.cubin")
    with open(ptx, "w") as f:
      f.write(kernel.asm["ptx"])
    with open(cubin, "wb") as f:
      f.write(kernel.asm["cubin"])
    report = subprocess.run([_nvidia_tool("ptxas"), "-arch=sm_90a", "-v", ptx, "-o",
                             os.devnull], capture_output=True, text=True, check=True).stderr
    sass = subprocess.run([_nvidia_tool("nvdisasm"), "-c", cubin], capture_output=True,
                          text=True, check=True).stdout
    stats = _stats(os.path.basename(path), num_warps,
                   registers=int(re.search(r"Used (\d+) registers", report).group(1)),
                   spill_bytes=int(re.search(r"(\d+) bytes spill stores", report).group(1)),
                   shared=kernel.metadata.shared, sass=sass)
    stats["cubin"] = kernel.asm["cubin"]
  return stats


def _split_functions(sass: str) -> dict[str, str]:
  """An `nvdisasm -c` listing of a whole cubin -> {function name: its listing}."""
  parts = re.split(r"^//-+ \.text\.(\S+)\s+-+\s*$", sass, flags=re.M)
  return dict(zip(parts[1::2], parts[2::2]))


def _requested_threads(elf_dump: str) -> dict[str, int]:
  """{function: threads per program} from `cuobjdump -elf` (EIATTR_REQNTID x)."""
  threads = {}
  for name, body in re.findall(r"^\.nv\.info\.(\S+)\n(.*?)(?=^\.\S|\Z)", elf_dump,
                               re.M | re.S):
    found = re.search(r"EIATTR_REQNTID\s+Format:\s+\S+\s+Value:\s+(0x[0-9a-f]+)", body)
    if found:
      threads[name] = int(found.group(1), 16)
  return threads


def cubin_stats(path: str, name_filter: str = "") -> list[dict]:
  """Per function of a cubin whose name matches `name_filter`, what `kernel_stats` reports
  (warps from the function's requested threads, 4 if it names none)."""
  run = lambda tool, *args: subprocess.run([_nvidia_tool(tool), *args, path],  # noqa: E731
                                           capture_output=True, text=True, check=True).stdout
  usage = dict(re.findall(r"Function (\S+):\n\s+(REG:\d+ .*)", run("cuobjdump", "-res-usage")))
  threads = _requested_threads(run("cuobjdump", "-elf"))
  with open(path, "rb") as f:
    cubin = f.read()
  stats = []
  for name, sass in _split_functions(run("nvdisasm", "-c")).items():
    if not re.search(name_filter, name) or name not in usage:
      continue
    field = lambda key: int(re.search(rf"{key}:(\d+)", usage[name]).group(1))  # noqa: E731
    stats.append(_stats(f"{os.path.basename(path)}:{name}",
                        max(1, threads.get(name, 128) // 32), registers=field("REG"),
                        spill_bytes=field("LOCAL"), shared=field("SHARED"), sass=sass))
    stats[-1].update(cubin=cubin, function=name)
  return stats


def life_range_listing(stats: dict, nvdisasm: str) -> str:
  """The `nvdisasm -c -plr -lrm count` listing of one kernel of `stats` (`kernel_stats` or
  `cubin_stats`), by the given nvdisasm binary."""
  with tempfile.TemporaryDirectory() as scratch:
    cubin = os.path.join(scratch, "k.cubin")
    with open(cubin, "wb") as f:
      f.write(stats["cubin"])
    sass = subprocess.run([nvdisasm, "-c", "-plr", "-lrm", "count", cubin],
                          capture_output=True, text=True, check=True).stdout
  functions = _split_functions(sass)
  # cubin_stats names the function; kernel_stats' cubin holds its one kernel.
  return functions[stats["function"]] if "function" in stats else next(iter(functions.values()))


def unique_kernels(stats: list[dict]) -> list[tuple[dict, int]]:
  """(stats, copies) of each distinct kernel, in order: XLA's build repeats a kernel for
  every copy of a loop it unrolls (the SDM layer's chunk loop: four of each phase-2
  kernel), the same function with the same code; kernels without a listing stay apart."""
  unique, index = [], {}
  for s in stats:
    key = (s.get("function"), s.get("sass")) if s.get("sass") else None
    if key is not None and key in index:
      unique[index[key]][1] += 1
      continue
    if key is not None:
      index[key] = len(unique)
    unique.append([s, 1])
  return [(s, copies) for s, copies in unique]


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("directory")
  parser.add_argument("--num_warps", type=int, default=4, help="without launch.json")
  parser.add_argument("--num_stages", type=int, default=1, help="without launch.json")
  parser.add_argument("--functions", default="",
                      help="cubins: report only functions matching this regex")
  parser.add_argument("--pipes", action="store_true",
                      help="per loop body, its instructions per pipe (`pipe_of`)")
  parser.add_argument("--listings", default="",
                      help="a directory to write each kernel's `nvdisasm -c` listing to")
  parser.add_argument("--live", nargs="?", const="bundled", default="",
                      help="where the registers go (`live_registers`), by this nvdisasm "
                           "(default: Triton's own; XLA's cubins need CUDA 13's)")
  parser.add_argument("--mix", default="",
                      help="LO:HI:TRIPS,... (hex addresses from --listings, ends included): "
                           "per kernel, the instructions per pipe one program issues")
  args = parser.parse_args()
  ranges = [(int(lo, 16), int(hi, 16), float(trips))
            for lo, hi, trips in (part.split(":") for part in args.mix.split(",") if part)]
  launch_file = os.path.join(args.directory, "launch.json")
  launch = {}
  if os.path.exists(launch_file):
    with open(launch_file) as f:
      launch = json.load(f)
  print(f"{'kernel':32} {'warps':>5} {'regs':>5} {'spills':>7} {'shared':>7} {'instrs':>7} "
        f"{'per SM':>7}  loop bodies")
  stats = []
  for path in sorted(glob.glob(os.path.join(args.directory, "*.ttir"))):
    asked = launch.get(os.path.basename(path), {})
    stats.append(kernel_stats(path, asked.get("num_warps", args.num_warps),
                              asked.get("num_stages", args.num_stages)))
  for path in sorted(glob.glob(os.path.join(args.directory, "*.cubin"))):
    stats.extend(cubin_stats(path, args.functions))
  for s, copies in unique_kernels(stats):
    print(f"{s['kernel']:32} {s['num_warps']:>5} {s['registers']:>5} {s['spill_bytes']:>7} "
          f"{s['shared_bytes']:>7} {s['instructions']:>7} {s['programs_per_sm']:>7}  "
          f"{' '.join(map(str, s['loop_bodies'])) or '-'}"
          + (f"  (x{copies}: identical copies)" if copies > 1 else ""))
    if args.live:
      nvdisasm = _nvidia_tool("nvdisasm") if args.live == "bundled" else args.live
      print(_live_line(live_registers(life_range_listing(s, nvdisasm))))
    if args.pipes:
      for size, pipes in zip(s["loop_bodies"], s["loop_pipes"]):
        print(f"  loop of {size}: " + ", ".join(f"{p} {n}" for p, n in pipes.items()))
    if args.listings:
      os.makedirs(args.listings, exist_ok=True)
      name = re.sub(r"[^\w.-]", "_", s["kernel"])[-120:]
      with open(os.path.join(args.listings, name + ".sass"), "w") as f:
        f.write(s["sass"])
    if ranges:
      mix = pipe_mix(s["sass"], ranges)
      cycles = mix.pop("cycles")
      print("  per program: " + ", ".join(f"{p} {n:.0f}" for p, n in mix.items())
            + f" (issued {sum(mix.values()):.0f}); cycles a scheduler's pipes are held: "
            + ", ".join(f"{p} {n:.0f}" for p, n in cycles.items()))


if __name__ == "__main__":
  main()
