"""Launches read from an optimized HLO module's text: counted by kind with loop bodies times
their trips, and weighed by bytes and by the project's source line that made them."""

from __future__ import annotations

import json

from experiments import hlo_launches

# The shape of an optimized HLO module as `Compiled.as_text()` prints it (trimmed).
HLO = """HloModule jit_step, is_scheduled=true

%fused_add (p: s32[]) -> s32[] {
  %p = s32[] parameter(0)
  ROOT %add = s32[] add(%p, %p)
}

%body (arg: (s32[], f32[8])) -> (s32[], f32[8]) {
  %arg = (s32[], /*index=1*/f32[8]{0}) parameter(0)
  %i = s32[] get-tuple-element(%arg), index=0
  %next = s32[] fusion(%i), kind=kLoop, calls=%fused_add
  %k = f32[8]{0} custom-call(%arg), custom_call_target="__gpu$xla.gpu.triton", metadata={op_name="jit(step)/block_3/mixer/while/body/pallas_call" stack_frame_id=2}
  ROOT %t = (s32[], f32[8]{0}) tuple(%next, %k)
}

%cond (arg: (s32[], f32[8])) -> pred[] {
  %arg = (s32[], f32[8]{0}) parameter(0)
  ROOT %lt = pred[] constant(true)
}

ENTRY %main (x: f32[8]) -> f32[8] {
  %x = f32[8]{0} parameter(0)
  %buffer = f32[8]{0} custom-call(), custom_call_target="AllocateBuffer"
  %g = f32[8]{0} fusion(%x, %buffer), kind=kInput, calls=%fused_add, metadata={op_name="jit(step)/block_3/mixer/gather" stack_frame_id=3}
  %h = bf16[4,2]{1,0} fusion(%g), kind=kLoop, calls=%fused_add, metadata={op_name="jit(step)/block_4/mlp/add" stack_frame_id=1}
  %ar = f32[8]{0} all-reduce-start(%g), replica_groups={}, to_apply=%fused_add
  %ad = f32[8]{0} all-reduce-done(%ar)
  %w = (s32[], /*index=1*/f32[8]{0}) while(%g), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"32"}}
  ROOT %o = f32[8]{0} get-tuple-element(%w), index=1
}

FileNames
1 "/usr/lib/python3/site-packages/jax/_src/numpy.py"
2 "/home/me/repo/sdm_jax/ops/sparse_delta/chunk.py"

FunctionNames
1 "take"
2 "_chunk_ids"

FileLocations
1 {file_name_id=1 function_name_id=1 line=10 end_line=10 column=1 end_column=2}
2 {file_name_id=2 function_name_id=2 line=132 end_line=132 column=1 end_column=2}

StackFrames
1 {file_location_id=1 parent_frame_id=1}
2 {file_location_id=2 parent_frame_id=2}
3 {file_location_id=1 parent_frame_id=2}
"""


def test_launches_count_loop_bodies_by_their_trips():
  launches = hlo_launches.kernel_launches(HLO)
  assert launches["by_kind"] == {"fusion:kLoop": 33, "custom:__gpu$xla.gpu.triton": 32,
                                 "fusion:kInput": 1, "all-reduce-start": 1}
  assert launches["total"] == 67  # an async pair launches once
  assert launches["loops"] == [{"body": "body", "trips": 32, "times": 1, "per_trip": 2}]


def test_launches_outside_loops_carry_bytes_and_their_project_source():
  """The gather's innermost frame is JAX's; its caller, the project's line, names it."""
  rows = hlo_launches.launch_rows(HLO)
  assert [(row.name, row.source) for row in rows] == [
      ("g", "sdm_jax/ops/sparse_delta/chunk.py:132 _chunk_ids"), ("h", "?"), ("ar", "?")]
  assert (rows[0].operand_bytes, rows[0].result_bytes) == (64, 32)  # x and buffer; f32[8]
  assert (rows[1].operand_bytes, rows[1].result_bytes) == (32, 16)
  assert [row.name for row in hlo_launches.launch_rows(HLO, "block_3/mixer")] == ["g"]
  assert hlo_launches.by_source(rows) == [  # the most bytes first
      {"source": "?", "launches": 2, "bytes": 112},
      {"source": "sdm_jax/ops/sparse_delta/chunk.py:132 _chunk_ids", "launches": 1,
       "bytes": 96}]


def test_profiled_time_is_summed_by_source_line():
  """Profile rows name ops by instruction (a kernel's with "." as "_")."""
  rows = [{"op": "k", "ms": 0.5, "count": 32}, {"op": "g", "ms": 0.25, "count": 1},
          {"op": "h", "ms": 1.0, "count": 1}, {"op": "cudnn_kernel", "ms": 2.0, "count": 1}]
  assert hlo_launches.time_by_source(HLO, rows, "block_3/mixer") == [
      {"source": "sdm_jax/ops/sparse_delta/chunk.py:132 _chunk_ids", "ms": 0.75,
       "launches": 33}]
  everything = hlo_launches.time_by_source(HLO, rows)
  assert [(r["source"], r["ms"]) for r in everything] == [
      ("not in the HLO", 2.0), ("?", 1.0),
      ("sdm_jax/ops/sparse_delta/chunk.py:132 _chunk_ids", 0.75)]


def test_the_cli_reads_a_bench_ops_profile(run_cli_process, tmp_path):
  hlo_path, profile_path = tmp_path / "sdm_small.hlo.txt", tmp_path / "bench.log"
  hlo_path.write_text(HLO)
  result = {"op": "train_step", "results": [
      {"config": "gdn_small", "top_ops": []},
      {"config": "sdm_small", "top_ops": [{"op": "k", "ms": 0.5, "count": 32}]}]}
  profile_path.write_text("some log line\n" + json.dumps(result) + "\n")
  done = run_cli_process("hlo_launches", f"--hlo={hlo_path}", f"--profile={profile_path}",
                         "--profile_config=sdm_small")
  assert done.returncode == 0, done.stderr
  assert json.loads(done.stdout.strip().splitlines()[-1])["by_source"] == [
      {"source": "sdm_jax/ops/sparse_delta/chunk.py:132 _chunk_ids", "ms": 0.5,
       "launches": 32}]
  done = run_cli_process("hlo_launches", f"--hlo={hlo_path}", f"--profile={profile_path}")
  assert done.returncode == 2 and "--profile_config must name one config" in done.stderr
