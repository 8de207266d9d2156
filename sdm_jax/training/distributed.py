"""Several processes (hosts) training one model through `jax.distributed`.

Every process runs the same command; after `initialize`, `jax.devices()` lists the devices
of all of them, the training mesh spans them all (`sdm_jax.sharding.make_mesh`) and each
process places only its own devices' rows of every batch (`train_step.shard_batch`).
"""

from __future__ import annotations

import os

import jax

# Launchers whose environment `jax.distributed.initialize()` reads by itself: the variable
# holding the number of processes.
_LAUNCHER_PROCESS_COUNTS = {"Slurm": "SLURM_NTASKS", "Open MPI": "OMPI_COMM_WORLD_SIZE"}


def detected_launcher() -> str | None:
  """The launcher that started this process as one of several (Slurm, Open MPI), or None."""
  for launcher, variable in _LAUNCHER_PROCESS_COUNTS.items():
    count = os.environ.get(variable, "")
    if count.isdigit() and int(count) > 1:
      return launcher
  return None


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None) -> bool:
  """Joins this process to a multi-process run when asked to or when the environment says
  so; returns whether it did. Call it before anything else touches JAX.

  Asked: `coordinator_address` ("host:port" of process 0), with `num_processes` and this
  process's `process_id`. Environment: a Slurm job step or an Open MPI launch of more than
  one process (JAX reads the address and ranks from it). Otherwise this is a one-process
  run and nothing happens.
  """
  given = {"coordinator_address": coordinator_address, "num_processes": num_processes,
           "process_id": process_id}
  if any(value is not None for value in given.values()):
    missing = sorted(name for name, value in given.items() if value is None)
    if missing:
      raise ValueError(f"a multi-process run needs --coordinator_address, --num_processes and "
                       f"--process_id together; missing: {', '.join('--' + m for m in missing)}")
    if num_processes < 1 or not 0 <= process_id < num_processes:
      raise ValueError(f"--process_id must be in [0, --num_processes={num_processes}), got "
                       f"{process_id}")
    jax.distributed.initialize(coordinator_address, num_processes, process_id)
    return True
  if detected_launcher() is not None:
    jax.distributed.initialize()
    return True
  return False
