"""Shared pytest setup.

Tests compare implementations at float32 tolerances, so matmuls run at full float32
precision on every platform (GPUs would otherwise use TF32 for float32 matmuls, a
1e-3-relative rounding that says nothing about the math under test).
"""

import os
import sys

import jax

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
  sys.path.insert(0, ROOT)

jax.config.update("jax_default_matmul_precision", "highest")
