"""When a process joins a multi-process run (the run itself is tested end to end in
tests/experiments/test_train_multiprocess.py)."""

from __future__ import annotations

import pytest

from sdm_jax.training import distributed


def test_one_process_without_flags_or_launcher(monkeypatch):
  for variable in ("SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE"):
    monkeypatch.delenv(variable, raising=False)
  assert distributed.detected_launcher() is None
  assert distributed.initialize() is False


def test_launchers_of_several_processes_are_detected(monkeypatch):
  monkeypatch.delenv("OMPI_COMM_WORLD_SIZE", raising=False)
  monkeypatch.setenv("SLURM_NTASKS", "1")  # one task: a plain run
  assert distributed.detected_launcher() is None
  monkeypatch.setenv("SLURM_NTASKS", "4")
  assert distributed.detected_launcher() == "Slurm"
  monkeypatch.delenv("SLURM_NTASKS")
  monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "2")
  assert distributed.detected_launcher() == "Open MPI"


@pytest.mark.parametrize("kwargs, message", [
    ({"coordinator_address": "localhost:1234"}, "missing: --num_processes, --process_id"),
    ({"num_processes": 2, "process_id": 0}, "missing: --coordinator_address"),
    ({"coordinator_address": "localhost:1234", "num_processes": 2, "process_id": 2},
     r"--process_id must be in \[0, --num_processes=2\)"),
])
def test_incomplete_or_wrong_flags_are_errors(kwargs, message):
  with pytest.raises(ValueError, match=message):
    distributed.initialize(**kwargs)
