"""Shared pytest setup.

Tests compare implementations at float32 tolerances, so matmuls run at full float32
precision on every platform (GPUs would otherwise use TF32 for float32 matmuls, a
1e-3-relative rounding that says nothing about the math under test).

Most of the suite's time is XLA compiling small programs, so on CPU the tests ask XLA for
its cheap optimisation levels (about 3x faster compiles of a training step); a user's
own XLA_FLAGS are kept and win.
"""

import os
import sys

FAST_COMPILE_XLA_FLAGS = ("--xla_llvm_disable_expensive_passes=true "
                          "--xla_backend_optimization_level=0")
if "XLA_FLAGS" not in os.environ:
  os.environ["XLA_FLAGS"] = FAST_COMPILE_XLA_FLAGS

import jax  # pylint: disable=g-import-not-at-top
import numpy as np  # pylint: disable=g-import-not-at-top
import pytest  # pylint: disable=g-import-not-at-top

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
  sys.path.insert(0, ROOT)

from tests.subprocess_env import TEST_CACHE_DIR  # pylint: disable=g-import-not-at-top

jax.config.update("jax_default_matmul_precision", "highest")

# Tests compile the same small programs again and again (each training run, each resume):
# a persistent cache for this test session turns the repeats into loads. Only compiles of
# at least half a second are stored: storing every tiny program cost more than loading it
# saved (the ops, layers and models tests, cold: 116 s storing all, 103 s storing those
# over 1 s).
jax.config.update("jax_compilation_cache_dir", TEST_CACHE_DIR)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def pytest_collection_modifyitems(config, items):
  """Tests marked `gpu` (`tpu`) run compiled GPU (TPU) kernels: they skip where JAX's
  default backend is another."""
  del config
  import pytest  # pylint: disable=g-import-not-at-top
  for platform in ("gpu", "tpu"):
    if jax.default_backend() == platform:
      continue
    skip = pytest.mark.skip(reason=f"needs a {platform.upper()} (jax.default_backend() != "
                                   f"'{platform}')")
    for item in items:
      if platform in item.keywords:
        item.add_marker(skip)


@pytest.fixture
def split_directory(tmp_path):
  """A nanoGPT-style directory: train.bin (500 ids) and val.bin (100 ids) of uint16 ids
  below 1000, except one 1000 in val (the largest id is in the validation split)."""
  rng = np.random.default_rng(0)
  rng.integers(0, 1000, 500).astype("<u2").tofile(tmp_path / "train.bin")
  val = rng.integers(0, 1000, 100).astype("<u2")
  val[7] = 1000
  val.tofile(tmp_path / "val.bin")
  return tmp_path
