"""`experiments.train` as two processes (jax.distributed over localhost, 4 CPU devices each)
on a (data, fsdp, model) = (2, 2, 2) mesh: the same losses as one process on one device,
one writer, and a checkpoint that a one-device `evaluate` restores."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from tests.experiments.conftest import ROOT

STEPS = 2
# sdm_tiny narrowed to seconds of CPU compilation: SM, d = Dv = 32, N = 256.
SDM_TINY = ["--config=experiments/configs/sdm_tiny.py", "--config.model.d_model=32",
            "--config.model.num_heads=2", "--config.model.num_layers=2",
            "--config.model.pattern=SM", "--config.model.window=16",
            "--config.model.max_seq_len=64", "--config.model.sdm_slots=256",
            "--config.model.sdm_writes=8", "--config.model.sdm_reads=8",
            "--config.model.sdm_chunk_size=16", "--config.train.seq_len=64",
            "--config.train.batch_size=8", "--config.train.log_every=1",
            "--config.train.eval_tokens=256", "--config.train.eval_batch_size=8",
            "--config.data.max_train_bytes=200000", "--sample_tokens=0", f"--steps={STEPS}"]


def free_port() -> int:
  with socket.socket() as s:
    s.bind(("localhost", 0))
    return s.getsockname()[1]


def last_json(stdout: str) -> dict:
  return json.loads(stdout.strip().splitlines()[-1])


def test_two_processes_train_like_one_device(cli_env, run_cli, tmp_path):
  def start(env, *flags):
    return subprocess.Popen([sys.executable, "-m", "experiments.train", *SDM_TINY, *flags],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)

  four_devices = {**cli_env, "XLA_FLAGS": "--xla_force_host_platform_device_count=4 "
                  + cli_env["XLA_FLAGS"]}
  address = f"localhost:{free_port()}"
  multi = str(tmp_path / "multi")
  processes = [start(four_devices, f"--workdir={multi}",
                     "--config.train.mesh=data=2,fsdp=2,model=2",
                     f"--coordinator_address={address}", "--num_processes=2",
                     f"--process_id={rank}") for rank in range(2)]
  processes.append(start(cli_env, f"--workdir={tmp_path / 'one'}"))
  try:  # a hung process (e.g. waiting on a peer that failed) must not outlive the test
    results = [process.communicate(timeout=300) for process in processes]
  finally:
    for process in processes:
      if process.poll() is None:
        process.kill()
  for process, (stdout, stderr) in zip(processes, results):
    assert process.returncode == 0, stderr[-3000:]
  outputs = [last_json(stdout) for stdout, _ in results]
  first, second, one = outputs

  assert first["mesh"] == second["mesh"] == {"data": 2, "fsdp": 2, "model": 2}
  assert one["mesh"] == {"data": 1, "fsdp": 1, "model": 1}
  assert second["process_id"] == 1
  assert first["step"] == second["step"] == one["step"] == STEPS
  # Both processes see the same replicated loss, equal to the one-device run's.
  assert first["train_loss"] == second["train_loss"]
  assert first["train_loss"] == pytest.approx(one["train_loss"], rel=1e-4)
  assert first["val_bpb"] == pytest.approx(one["val_bpb"], rel=1e-4)
  assert first["param_bytes"] == one["param_bytes"] == one["param_bytes_per_device"]
  assert first["param_bytes_per_device"] < first["param_bytes"] / 2  # fsdp (and M0 over model)
  # Process 0 alone wrote the metrics: one line per step.
  with open(os.path.join(multi, "metrics.jsonl")) as f:
    assert [json.loads(line)["step"] for line in f] == list(range(1, STEPS + 1))
  # The checkpoint saved by two processes on 8 devices restores onto one device.
  evaluated = last_json(run_cli("evaluate", f"--workdir={multi}"))
  assert evaluated["val_bpb"] == pytest.approx(first["val_bpb"], rel=1e-5)
