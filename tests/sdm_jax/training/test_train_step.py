"""The sharded train step: 4 forced host devices give the 1-device result."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.subprocess_env import subprocess_pythonpath

from sdm_jax.sharding import make_mesh
from sdm_jax.training.train_step import shard_batch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))


def test_four_device_step_equals_one_device_step():
  env = {**os.environ, "PYTHONPATH": subprocess_pythonpath(), "JAX_PLATFORMS": "cpu"}
  out = subprocess.run([sys.executable, "-m", "tests.sdm_jax.training.sharded_step_main"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
  assert out.returncode == 0, out.stderr[-3000:]
  result = json.loads(out.stdout.strip().splitlines()[-1])
  # Adam divides by sqrt(v): for near-zero gradients a reduction-order difference of 1e-7
  # moves an update by a fraction of the learning rate (1e-3), hence this bound.
  assert result["max_param_diff"] < 1e-4
  # The second step's loss and gradient norm see the first update: both must agree.
  assert result["loss_1"] == pytest.approx(result["loss_4"], rel=1e-5)
  assert result["grad_norm_1"] == pytest.approx(result["grad_norm_4"], rel=1e-4)


def test_batch_must_divide_over_devices():
  mesh = make_mesh(num_devices=1)
  assert shard_batch(np.zeros((3, 5), np.int32), mesh).shape == (3, 5)
  with pytest.raises(ValueError, match="num_devices"):
    make_mesh(num_devices=10_000)
