"""Environment for tests that start Python subprocesses."""

from __future__ import annotations

import os
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The persistent compile cache of the test sessions (tests/conftest.py) and of their
# subprocesses: a warm run loads the entry points' compiled steps instead of compiling them.
# Empty it (rm -rf) to time a cold run.
TEST_CACHE_DIR = os.path.join(tempfile.gettempdir(), f"sdm_jax_test_cache_{os.getuid()}")


def subprocess_pythonpath() -> str:
  """The repository first, then whatever PYTHONPATH the caller already had (packages
  installed with `pip --target`, as on the GPU machine, must stay importable)."""
  return os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH", "")) if p)
