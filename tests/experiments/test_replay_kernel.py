"""A saved kernel launch read back for its replay: the same bytes per parameter, in-place
outputs on their input's buffer, Triton's scratch parameters null; each build launched in
turn with its own warps."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

from experiments import replay_kernel
from sdm_jax.evaluation import kernel_operands

LAUNCH = dict(kernel="k_kernel", grid=[2, 3, 1], num_warps=4, params=[
    dict(name="chunk", role="in", array=np.array([5], np.int32)),
    dict(name="table", role="in", array=np.arange(12, dtype=np.float32).reshape(3, 4)),
    dict(name="table", role="out", same_as=1, shape=[3, 4], dtype="float32"),
    dict(name="out", role="out", array=np.zeros((2, 2), np.float32)),
])


def test_saved_launch_reads_back_as_its_bytes(tmp_path):
  directory = kernel_operands.save(LAUNCH, str(tmp_path))
  launch = replay_kernel.load_launch(directory)
  assert (launch["kernel"], launch["grid"], launch["num_warps"]) == ("k_kernel", [2, 3, 1], 4)
  operands = replay_kernel.host_operands(launch, directory)
  assert operands[0].tobytes() == np.array([5], np.int32).tobytes()
  assert operands[1].view(np.float32).reshape(3, 4).tolist() == LAUNCH["params"][1][
      "array"].tolist()
  assert operands[2] == 1  # the in-place output names its input
  assert operands[3].size == 16 and not operands[3].any()

  moved = []
  arguments = replay_kernel.device_arguments(
      operands, lambda a: moved.append(a.copy()) or moved[-1])
  assert len(arguments) == 4 + replay_kernel.SCRATCH_PARAMS
  assert arguments[2] is arguments[1]  # one buffer for the table in and out
  assert len(moved) == 3 and all(a == 0 for a in arguments[4:])


def test_variants_name_a_cubin_and_optionally_their_warps():
  assert replay_kernel.parse_variant("w2=/x/a.cubin@2", 4) == ("w2", "/x/a.cubin", 2)
  assert replay_kernel.parse_variant("main=b.cubin", 4) == ("main", "b.cubin", 4)
  for bad in ("b.cubin", "w2=", "w2=a.cubin@two"):
    with pytest.raises(ValueError, match="NAME=CUBIN"):
      replay_kernel.parse_variant(bad, 4)


def test_builds_are_timed_in_turn_after_their_warmup():
  order = []
  times = replay_kernel.interleaved_times(
      {"a": "A", "b": "B"}, warmup=1, repeats=2,
      timed_launch=lambda arguments: order.append(arguments) or len(order))
  assert order == ["A", "B", "A", "B", "A", "B"]
  assert times == {"a": [3, 5], "b": [4, 6]}  # the warmup launches are not timed


class _FakeCupy:
  """What the replay uses of CuPy, recording each launch instead of running it."""

  def __init__(self):
    self.launches = []
    fake = self

    class Function:
      num_regs, shared_size_bytes = 40, 1024

      def __init__(self, path, name):
        self.path, self.name = path, name

      def __call__(self, grid, block, arguments, shared_mem=0):
        fake.launches.append((self.path, self.name, grid, block, len(arguments), shared_mem))

    class RawModule:
      def __init__(self, path):
        self.path = path

      def get_function(self, name):
        return Function(self.path, name)

    class Event:
      def record(self):
        pass

      def synchronize(self):
        pass

    self.RawModule, self.asarray = RawModule, np.array
    self.cuda = type("cuda", (), {"Event": Event,
                                  "get_elapsed_time": staticmethod(lambda a, b: 0.01)})


def _launches_beside(cubin: str, launches: list) -> None:
  with open(cubin + replay_kernel.LAUNCHES_SUFFIX, "w") as f:
    json.dump(launches, f)


def test_shared_memory_is_xlas_for_the_grid_or_the_fallback(tmp_path):
  cubin = str(tmp_path / "k.cubin")
  with pytest.raises(ValueError, match="--shared_bytes"):
    replay_kernel.shared_bytes_for(cubin, [2, 3, 1], None)
  assert replay_kernel.shared_bytes_for(cubin, [2, 3, 1], 256) == 256
  _launches_beside(cubin, [
      {"blocks": [2, 3, 1], "threads": [128, 1, 1], "shared_bytes": 512},
      {"blocks": [9, 3, 1], "threads": [128, 1, 1], "shared_bytes": 4096}])
  assert replay_kernel.shared_bytes_for(cubin, [2, 3, 1], 256) == 512  # XLA's, not the flag
  with pytest.raises(ValueError, match="no launch on grid"):
    replay_kernel.shared_bytes_for(cubin, [1, 1, 1], None)


def test_the_sidecar_name_is_the_one_cached_binaries_writes():
  from experiments import cached_binaries  # pylint: disable=g-import-not-at-top
  assert replay_kernel.LAUNCHES_SUFFIX == cached_binaries.LAUNCHES_SUFFIX


def test_main_launches_each_build_with_its_warps(tmp_path, monkeypatch, capsys):
  directory = kernel_operands.save(dict(LAUNCH, cubin="k.cubin"), str(tmp_path))
  _launches_beside(os.path.join(directory, "k.cubin"), [
      {"blocks": [2, 3, 1], "threads": [128, 1, 1], "shared_bytes": 512}])
  fake = _FakeCupy()
  monkeypatch.setitem(sys.modules, "cupy", fake)
  monkeypatch.setattr(sys, "argv", ["replay_kernel.py", directory, "--variant=w2=/x/b.cubin@2",
                                    "--warmup=1", "--repeats=2", "--shared_bytes=64"])
  replay_kernel.main()
  result = json.loads(capsys.readouterr().out)
  assert set(result["builds"]) == {"recorded", "w2"}
  assert result["builds"]["recorded"]["cubin"] == os.path.join(directory, "k.cubin")
  assert result["builds"]["w2"]["threads"] == 64 and result["builds"]["recorded"]["threads"] == 128
  assert result["builds"]["w2"]["median_us"] == 10.0  # 0.01 ms
  # 1 warmup + 2 timed launches each, in turn after the warmups, all with 4 + 2 arguments.
  assert [launch[0] for launch in fake.launches] == [
      os.path.join(directory, "k.cubin"), "/x/b.cubin"] * 3
  # Shared memory: XLA's beside the recorded cubin, the flag's for the variant without.
  assert {launch[1:3] + launch[4:] for launch in fake.launches} == {
      ("k_kernel", (2, 3, 1), 6, 512), ("k_kernel", (2, 3, 1), 6, 64)}
  assert result["builds"]["recorded"]["shared_bytes"] == 512
