"""Environment for tests that start Python subprocesses."""

from __future__ import annotations

import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def subprocess_pythonpath() -> str:
  """The repository first, then whatever PYTHONPATH the caller already had (packages
  installed with `pip --target`, as on the GPU machine, must stay importable)."""
  return os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH", "")) if p)
