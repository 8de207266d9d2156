"""Compiling a program as XLA does for an H200 without a GPU. The compile itself needs JAX's
CUDA plugin (an environment of its own, `experiments/xla_build.py`); without it, the error
says so."""

from __future__ import annotations

import importlib.util
import json
import os

import pytest

from experiments import xla_build

HAS_CUDA_PLUGIN = any(importlib.util.find_spec(f"jax_plugins.xla_cuda{version}") is not None
                      for version in (12, 13)) if importlib.util.find_spec("jax_plugins") else False


def _h200() -> str:
  with open(xla_build.H200_TARGET) as f:
    return f.read()


def test_the_target_describes_the_h200():
  target = _h200()
  for field in ("core_count: 132", "major: 9", 'device_description_str: "NVIDIA H200"'):
    assert field in target


@pytest.mark.skipif(HAS_CUDA_PLUGIN, reason="the plugin is there")
def test_without_the_cuda_plugin_the_error_names_it(run_cli_subprocess, tmp_path):
  with pytest.raises(ValueError, match="CUDA plugin"):
    xla_build.compile_only_device(_h200())
  result = run_cli_subprocess("xla_build", "--op=topk", "--topk_rows=8", "--topk_sub_keys=16",
                              "--topk_k=4", f"--binaries_dir={tmp_path}")
  assert result.returncode == 2 and "CUDA plugin" in result.stderr


@pytest.mark.skipif(not HAS_CUDA_PLUGIN, reason="needs JAX's CUDA plugin")
def test_the_topk_kernel_is_built_by_xla(run_cli_subprocess, tmp_path):
  """In a process of its own: the plugin registers without a GPU only where the platforms
  asked for leave CUDA out from the start (`xla_build.main`)."""
  result = run_cli_subprocess("xla_build", "--op=topk", "--topk_rows=64", "--topk_sub_keys=16",
                              "--topk_k=4", f"--binaries_dir={tmp_path}")
  assert result.returncode == 0, result.stderr
  assert "product_key_topk_kernel" in json.loads(result.stdout.strip().splitlines()[-1])["kernels"]
  files = os.listdir(tmp_path)
  assert any(name.endswith(".product_key_topk_kernel.cubin") for name in files)
  with open(os.path.join(tmp_path, xla_build.HLO_FILE)) as f:
    assert "product_key_topk_kernel" in f.read()
