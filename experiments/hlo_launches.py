"""What a compiled XLA program launches, read from its optimized HLO text (what
`Compiled.as_text()` prints; `experiments.xla_build` writes it as hlo.txt): how many
kernels one run launches, loop bodies counted by their trip counts (`kernel_launches`), and
the launches outside loops with the bytes of their operands and results and the source line
of this project that made them (`launch_rows`, `by_source`).

  python -m experiments.hlo_launches --hlo=/tmp/xla_step/hlo.txt --op_name=block_3/mixer

prints the launches whose JAX name stack holds `--op_name` (here `sdm_small`'s first SDM
layer, forward and backward), summed by source line, then the costliest ones. With
`--profile` (a `bench_ops --op=train_step --top_ops=N --hlo_dir=DIR` output, DIR holding
the same program's HLO), it sums measured device time by source line instead. Bytes are a
static measure of what a launch touches (every operand counted whole, so gathers and
in-place scatters count more than they move); at HBM's pace they bound the memory-bound
glue around the kernels from below (WORKSPACE.md, issue 11, session 44).
"""

from __future__ import annotations

import collections
import json
import re
from typing import NamedTuple

from absl import flags

from experiments import cli
from sdm_jax.evaluation import timing
from sdm_jax.training import records

_HLO = flags.DEFINE_string("hlo", None, "An optimized HLO text file (xla_build's hlo.txt).")
_OP_NAME = flags.DEFINE_string("op_name", "", "Only launches whose JAX name stack holds this.")
_TOP = flags.DEFINE_integer("top", 25, "How many source lines and launches to list.")
_PROFILE = flags.DEFINE_string(
    "profile", None, "A `bench_ops --op=train_step --top_ops=N --hlo_dir=...` output (its JSON "
    "line): the device time of --profile_config's ops summed by source line instead.")
_PROFILE_CONFIG = flags.DEFINE_string("profile_config", None, "Which config of --profile.")

# Instructions that launch nothing on the device (bookkeeping, aliases; of an async pair,
# the `-done` half: its `-start` is the launch).
_NO_LAUNCH = frozenset({
    "parameter", "get-tuple-element", "tuple", "bitcast", "constant", "after-all",
    "partition-id", "replica-id", "opt-barrier", "add-dependency", "domain",
    "get-dimension-size"})
# Custom calls that launch nothing: AllocateBuffer gives a buffer without writing it.
_NO_LAUNCH_TARGETS = frozenset({"AllocateBuffer"})
_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4,
          "u32": 4, "f32": 4, "s64": 8, "u64": 8, "f64": 8}
_SHAPE = re.compile(r"\b(" + "|".join(_BYTES) + r")\[([\d,]*)\]")
# Source files of this project (the innermost of them names a launch's source).
PROJECT_DIRS = ("pallas_kernels/", "sdm_jax/", "maglev_jax/")


def _computations(hlo: str) -> tuple[dict[str, list[str]], str]:
  """({computation name: its instruction lines}, the entry's name) of an HLO module."""
  computations, entry, current = {}, None, None
  for line in hlo.splitlines():
    header = re.match(r"^(ENTRY )?%?([\w.\-]+) .*\{\s*$", line)
    if header:
      current = header.group(2)
      computations[current] = []
      entry = current if header.group(1) else entry
    elif line.startswith("}"):
      current = None
    elif current is not None and " = " in line:
      computations[current].append(line.strip())
  return computations, entry


_NAME_AND_TYPE = re.compile(r"(?:ROOT )?%?([\w.\-]+) = (.*?) [a-z][a-z0-9\-]*\(")


def _name(instruction: str) -> str | None:
  """The instruction's name (what other instructions call it by)."""
  found = _NAME_AND_TYPE.match(instruction)
  return found and found.group(1)


def _opcode(instruction: str) -> str | None:
  """The opcode: the first `word(` after ` = ` (types hold no such word)."""
  found = re.search(r"\s([a-z][a-z0-9\-]*)\(", instruction[instruction.find(" = "):])
  return found and found.group(1)


def _launches(instruction: str, opcode: str | None) -> bool:
  return opcode is not None and opcode not in _NO_LAUNCH and not opcode.endswith(
      "-done") and not any(
      f'custom_call_target="{target}"' in instruction for target in _NO_LAUNCH_TARGETS)


def _launch_kind(instruction: str, opcode: str) -> str:
  """fusion:<kind> (XLA's fusion kinds; Triton GEMMs by their backend kind), custom:<target>
  (library calls and Pallas kernels), or the opcode."""
  if opcode == "fusion":
    backend = re.search(r'"kind":"(__[\w$.]+)"', instruction)
    kind = re.search(r"kind=(k\w+)", instruction)
    return "fusion:" + (backend.group(1) if backend else kind.group(1) if kind else "?")
  if opcode == "custom-call":
    target = re.search(r'custom_call_target="([^"]+)"', instruction)
    return "custom:" + (target.group(1) if target else "?")
  return opcode


def kernel_launches(hlo: str) -> dict:
  """What one run of the compiled HLO launches, counted from its instructions: every
  instruction but bookkeeping is taken as one launch (a fusion is one kernel, a library
  call one or a few), a while loop's body counted its known trip count times and each
  branch of a conditional once. Returns {"total", "by_kind": {kind: count}, "loops":
  [{"body", "trips", "per_trip", "times"}]} (times: how often the loop itself runs)."""
  computations, entry = _computations(hlo)
  by_kind, loops = collections.Counter(), []

  def walk(name: str, times: int):
    for instruction in computations.get(name, ()):
      opcode = _opcode(instruction)
      if opcode == "while":
        body = re.search(r"body=%?([\w.\-]+)", instruction).group(1)
        trips = re.search(r'"known_trip_count":\{"n":"(\d+)"', instruction)
        trips = int(trips.group(1)) if trips else 1
        before = sum(by_kind.values())
        walk(body, times * trips)
        loops.append({"body": body, "trips": trips, "times": times,
                      "per_trip": (sum(by_kind.values()) - before) // (times * trips)})
      elif opcode == "conditional":
        for branches in re.findall(r"branch_computations=\{([^}]*)\}", instruction):
          for branch in branches.split(","):
            walk(branch.strip().lstrip("%"), times)
      elif opcode == "call":
        walk(re.search(r"to_apply=%?([\w.\-]+)", instruction).group(1), times)
      elif _launches(instruction, opcode):
        by_kind[_launch_kind(instruction, opcode)] += times

  walk(entry, 1)
  return {"total": sum(by_kind.values()), "by_kind": dict(by_kind.most_common()),
          "loops": loops}


def _type_bytes(text: str) -> int:
  """Bytes of every array shape in a type (a tuple's summed)."""
  total = 0
  for dtype, dims in _SHAPE.findall(text):
    count = 1
    for dim in filter(None, dims.split(",")):
      count *= int(dim)
    total += count * _BYTES[dtype]
  return total


def _source_lines(hlo: str) -> dict[int, str]:
  """{stack frame id: "path:line function"} of the innermost frame in this project's files,
  from the module's FileNames / FunctionNames / FileLocations / StackFrames tables."""
  tables, current = collections.defaultdict(dict), None
  for line in hlo.splitlines():
    if line in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
      current = line
    elif current and re.match(r"^\d+ ", line):
      key, value = line.split(" ", 1)
      tables[current][int(key)] = value.strip('"')
    else:
      current = None
  locations = {}
  for key, value in tables["FileLocations"].items():
    found = re.search(r"file_name_id=(\d+) function_name_id=(\d+) line=(\d+)", value)
    path = tables["FileNames"].get(int(found.group(1)), "?")
    locations[key] = (path, tables["FunctionNames"].get(int(found.group(2)), "?"),
                      int(found.group(3)))
  frames = {}
  for key, value in tables["StackFrames"].items():
    found = re.search(r"file_location_id=(\d+) parent_frame_id=(\d+)", value)
    frames[key] = (int(found.group(1)), int(found.group(2)))

  def project_line(frame: int) -> str:
    for _ in range(len(frames)):
      if frame not in frames:
        break
      path, function, line = locations.get(frames[frame][0], ("?", "?", 0))
      rooted = "/" + path
      for directory in PROJECT_DIRS:
        at = rooted.rfind("/" + directory)
        if at >= 0:
          return f"{rooted[at + 1:]}:{line} {function}"
      if frames[frame][1] == frame:
        break
      frame = frames[frame][1]
    return "?"

  return {frame: project_line(frame) for frame in frames}


class Launch(NamedTuple):
  """One launch outside loops: its instruction's name, `_launch_kind`, JAX name stack, the
  innermost source line of this project ("?" where none), and the bytes of its operands
  and of its result."""
  name: str
  kind: str
  op_name: str
  source: str
  operand_bytes: int
  result_bytes: int


def launch_rows(hlo: str, op_name: str = "") -> list[Launch]:
  """The entry computation's launches (loops left out: `kernel_launches` counts them) whose
  JAX name stack holds `op_name`, in program order."""
  computations, entry = _computations(hlo)
  types = dict(found.groups() for instructions in computations.values()
               for found in map(_NAME_AND_TYPE.match, instructions) if found)
  sources = _source_lines(hlo)
  rows = []
  for instruction in computations.get(entry, ()):
    opcode = _opcode(instruction)
    if opcode in ("while", "conditional", "call") or not _launches(instruction, opcode):
      continue
    stack = re.search(r'op_name="([^"]*)"', instruction)
    stack = stack.group(1) if stack else ""
    if op_name not in stack:
      continue
    name = _name(instruction)
    operands = re.search(re.escape(opcode) + r"\(([^)]*)\)", instruction)
    frame = re.search(r"stack_frame_id=(\d+)", instruction)
    rows.append(Launch(
        name, _launch_kind(instruction, opcode), stack,
        sources.get(int(frame.group(1)), "?") if frame else "?",
        sum(_type_bytes(types.get(operand, ""))
            for operand in re.findall(r"%([\w.\-]+)", operands.group(1) if operands else "")),
        _type_bytes(types.get(name, ""))))
  return rows


def by_source(rows: list[Launch]) -> list[dict]:
  """Launches and bytes summed per source line, the most bytes first."""
  sums = collections.defaultdict(lambda: [0, 0])
  for row in rows:
    sums[row.source][0] += 1
    sums[row.source][1] += row.operand_bytes + row.result_bytes
  return [{"source": source, "launches": count, "bytes": size}
          for source, (count, size) in sorted(sums.items(), key=lambda item: -item[1][1])]


def instruction_sources(hlo: str) -> dict[str, tuple[str, str]]:
  """{instruction name: (its JAX name stack, its project source line)} over every
  computation, each also under its GPU kernel's name (`timing.gpu_kernel_name`)."""
  sources = _source_lines(hlo)
  named = {}
  for instructions in _computations(hlo)[0].values():
    for instruction in instructions:
      name = _name(instruction)
      stack = re.search(r'op_name="([^"]*)"', instruction)
      frame = re.search(r"stack_frame_id=(\d+)", instruction)
      if name and stack:
        where = (stack.group(1), sources.get(int(frame.group(1)), "?") if frame else "?")
        named[name] = where
        named.setdefault(timing.gpu_kernel_name(name), where)
  return named


def time_by_source(hlo: str, profile_rows: list[dict], op_name: str = "") -> list[dict]:
  """Device time per source line: `timing.device_time_by_op` rows ({"op": instruction or
  kernel name, "ms", "count"} per call) of the program `hlo` is, those whose JAX name
  stack holds `op_name`, summed by `instruction_sources`' line ("?" where unknown, "not in
  the HLO" for ops it does not name), the most time first."""
  named = instruction_sources(hlo)
  sums = collections.defaultdict(lambda: [0.0, 0.0])
  for row in profile_rows:
    stack, source = named.get(row["op"], ("", "not in the HLO"))
    if op_name and op_name not in stack:
      continue
    sums[source][0] += row["ms"]
    sums[source][1] += row["count"]
  return [{"source": source, "ms": ms, "launches": count}
          for source, (ms, count) in sorted(sums.items(), key=lambda item: -item[1][0])]


def _profile_rows(path: str, config: str | None) -> list[dict]:
  """The top_ops rows of one config in a bench_ops train_step output file."""
  with open(path) as f:
    lines = [line for line in f if line.startswith("{")]
  results = json.loads(lines[-1])["results"]
  chosen = [r for r in results if config is None or r.get("config") == config]
  if len(chosen) != 1 or "top_ops" not in chosen[0]:
    raise ValueError(f"--profile_config must name one config with top_ops in {path} "
                     f"(it has {[r.get('config') for r in results]})")
  return chosen[0]["top_ops"]


def main(argv):
  del argv
  if not _HLO.value:
    raise ValueError("--hlo must name an optimized HLO text file")
  with open(_HLO.value) as f:
    hlo = f.read()
  if _PROFILE.value:
    rows = time_by_source(hlo, _profile_rows(_PROFILE.value, _PROFILE_CONFIG.value),
                          _OP_NAME.value)
    print(f"{sum(r['ms'] for r in rows):.2f} ms of device time in {len(rows)} source lines")
    for row in rows[:_TOP.value]:
      print(f"{row['ms']:8.3f} ms {row['launches']:7.0f}  {row['source']}")
    print(records.dumps({"hlo": _HLO.value, "op_name": _OP_NAME.value, "by_source": rows}))
    return
  rows = launch_rows(hlo, _OP_NAME.value)
  total = sum(row.operand_bytes + row.result_bytes for row in rows)
  print(f"{len(rows)} launches outside loops, {total / 1e6:,.0f} MB of operands and results")
  for entry in by_source(rows)[:_TOP.value]:
    print(f"{entry['launches']:5d} {entry['bytes'] / 1e6:9,.0f} MB  {entry['source']}")
  print("costliest launches:")
  for row in sorted(rows, key=lambda r: -(r.operand_bytes + r.result_bytes))[:_TOP.value]:
    print(f"{(row.operand_bytes + row.result_bytes) / 1e6:9,.0f} MB  {row.kind:32s} "
          f"{row.name:40s} {row.source}")
  print(records.dumps({"hlo": _HLO.value, "op_name": _OP_NAME.value, "launches": len(rows),
                       "bytes": total, "loops": kernel_launches(hlo)["loops"]}))


if __name__ == "__main__":
  cli.run(main)
