"""Orbax checkpoints of a `TrainState`: periodic save, keep the last K, exact resume."""

from __future__ import annotations

import os
from typing import Any

import jax
import orbax.checkpoint as ocp


class Checkpointer:
  """Saves and restores train states under `<workdir>/checkpoints/<step>`."""

  def __init__(self, workdir: str, *, max_to_keep: int = 3):
    if max_to_keep < 1:
      raise ValueError(f"max_to_keep must be >= 1, got {max_to_keep}")
    self.directory = os.path.abspath(os.path.join(workdir, "checkpoints"))
    self._manager = ocp.CheckpointManager(
        self.directory, options=ocp.CheckpointManagerOptions(max_to_keep=max_to_keep,
                                                             create=True))

  def latest_step(self) -> int | None:
    return self._manager.latest_step()

  def all_steps(self) -> list[int]:
    return list(self._manager.all_steps())

  def save(self, step: int, state: Any) -> None:
    """Writes `state` as checkpoint `step` and waits until it is on disk."""
    self._manager.save(step, args=ocp.args.StandardSave(state), force=True)
    self._manager.wait_until_finished()

  def restore(self, like: Any, step: int | None = None) -> Any:
    """Restores checkpoint `step` (latest by default) into the structure and shardings of
    `like` (a state of the same shapes, e.g. a freshly initialised one)."""
    step = self.latest_step() if step is None else step
    if step is None:
      raise FileNotFoundError(f"no checkpoint under {self.directory}")
    abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, like)
    return self._manager.restore(step, args=ocp.args.StandardRestore(abstract))

  def close(self) -> None:
    self._manager.close()
