"""Orbax checkpoints of a `TrainState`: periodic save, keep the last K, exact resume, and a
restore that survives a damaged checkpoint (a truncated or emptied file, as a crash during
a save or a full disk leaves)."""

from __future__ import annotations

import os
import sys
from typing import Any, Callable

import jax
import orbax.checkpoint as ocp


class DamagedCheckpointError(ValueError):
  """A checkpoint that cannot be restored; the message names it and the intact steps."""


def _warn(message: str) -> None:
  print(f"warning: {message}", file=sys.stderr, flush=True)


def _damage(step_dir: str, error: BaseException) -> str:
  """One line about why a restore failed: the first line of the error that names a file
  (or of the outermost one) and any empty files of the checkpoint."""
  chain = []
  while error is not None:
    chain.append(error)
    error = error.__cause__ or error.__context__
  first_line = lambda e: next((l for l in str(e).splitlines() if l.strip()), "")  # noqa: E731
  # The error that names a file (tensorstore's "... at local file ..."), else the outermost
  # one with a message.
  cause = next((e for e in chain if " file " in first_line(e)),
               next((e for e in chain if first_line(e)), chain[0]))
  lines = [line.strip() for line in str(cause).splitlines() if line.strip()]
  text = f"{type(cause).__name__}: {lines[0]}" if lines else type(cause).__name__
  if len(text) > 240:
    text = text[:237] + "..."
  empty = sorted(os.path.relpath(os.path.join(root, name), step_dir)
                 for root, _, names in os.walk(step_dir) for name in names
                 if os.path.getsize(os.path.join(root, name)) == 0)
  return text + (f"; empty files: {', '.join(empty)}" if empty else "")


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
    return sorted(self._manager.all_steps())

  def save(self, step: int, state: Any) -> None:
    """Writes `state` as checkpoint `step` and waits until it is on disk."""
    self._manager.save(step, args=ocp.args.StandardSave(state), force=True)
    self._manager.wait_until_finished()

  def delete(self, step: int) -> None:
    self._manager.delete(step)

  def _restore_step(self, abstract: Any, step: int) -> Any:
    return self._manager.restore(step, args=ocp.args.StandardRestore(abstract))

  def _step_path(self, step: int) -> str:
    return os.path.join(self.directory, str(step))

  def restore(self, like: Any, step: int | None = None, *,
              warn: Callable[[str], None] = _warn) -> Any:
    """Restores checkpoint `step` into the structure and shardings of `like` (a state of
    the same shapes, e.g. a freshly initialised one).

    With `step=None` the newest intact checkpoint: a damaged newer one is reported through
    `warn` (one line naming it) and skipped; `damaged_steps` lists the skipped ones.
    Raises FileNotFoundError without checkpoints and DamagedCheckpointError when the
    requested (or every) checkpoint cannot be restored.
    """
    abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, like)
    steps = self.all_steps()
    if not steps:
      raise FileNotFoundError(f"no checkpoint under {self.directory}")
    self.damaged_steps = []
    if step is not None:
      if step not in steps:
        raise DamagedCheckpointError(f"no checkpoint step {step} under {self.directory}; "
                                     f"steps there: {steps}")
      try:
        return self._restore_step(abstract, step)
      except Exception as error:  # noqa: BLE001 - any failure means a damaged checkpoint
        intact = [s for s in steps if s != step and self._intact(abstract, s)]
        raise DamagedCheckpointError(
            f"checkpoint step {step} ({self._step_path(step)}) is damaged: "
            f"{_damage(self._step_path(step), error)}; intact steps: {intact or 'none'}"
        ) from None
    for candidate in reversed(steps):
      try:
        return self._restore_step(abstract, candidate)
      except Exception as error:  # noqa: BLE001
        self.damaged_steps.append(candidate)
        warn(f"checkpoint step {candidate} ({self._step_path(candidate)}) is damaged "
             f"({_damage(self._step_path(candidate), error)}); trying an older one")
    raise DamagedCheckpointError(f"every checkpoint under {self.directory} is damaged "
                                 f"(steps {steps})")

  def _intact(self, abstract: Any, step: int) -> bool:
    try:
      self._restore_step(abstract, step)
    except Exception:  # noqa: BLE001
      return False
    return True

  def close(self) -> None:
    self._manager.close()
