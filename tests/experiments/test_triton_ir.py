"""The Triton IR dump of the phase-2 kernels (lowered for CUDA on CPU) and the parts of its
stats script that need no Triton."""

from __future__ import annotations

import importlib.util
import os

import pytest

from experiments import triton_ir
from experiments import triton_ir_stats
from pallas_kernels.sparse_delta import scan_pallas

TINY = dict(batch=1, seq_len=32, slots=256, value_dim=32, writes=4, reads=4, chunk_size=16)


@pytest.mark.parametrize("entry_sums", scan_pallas.ENTRY_SUMS)
def test_every_phase2_kernel_lowers_to_one_module(entry_sums):
  config = scan_pallas.default_config(32)._replace(entry_sums=entry_sums)
  modules = triton_ir.kernel_ir(config=config, **TINY)
  assert [name for name, _ in modules] == [
      "fwd_gather_kernel", "fwd_dense_kernel", "fwd_scatter_kernel", "bwd_gather_kernel",
      "bwd_dense_kernel", "bwd_written_kernel", "bwd_read_kernel"]
  for name, text in modules:
    assert text.startswith(f"module @{name} {{") and f"tt.func public @{name}" in text
    stripped = triton_ir_stats._strip_locations(text)  # pylint: disable=protected-access
    assert "#loc" not in stripped and "[unknown]" not in stripped
  one_hot = [text for name, text in modules if name == "fwd_scatter_kernel"][0]
  assert ("tt.dot" in one_hot) == (entry_sums == "onehot")  # segments sum without matmuls


def test_residency_follows_registers_shared_memory_and_warps():
  assert triton_ir_stats.programs_per_sm(255, 24576, 4) == 2  # 256 x 32 x 4 per program
  assert triton_ir_stats.programs_per_sm(96, 4096, 4) == 5
  assert triton_ir_stats.programs_per_sm(32, 0, 4) == 16  # then the 64-warp limit
  assert triton_ir_stats.programs_per_sm(32, 100 * 1024, 1) == 2  # shared memory


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="needs Triton")
def test_stats_compile_a_dumped_kernel(tmp_path):
  config = scan_pallas.default_config(32)
  name, text = triton_ir.kernel_ir(config=config, **TINY)[2]
  path = os.path.join(tmp_path, f"02_{name}.ttir")
  with open(path, "w") as f:
    f.write(text)
  stats = triton_ir_stats.kernel_stats(path, config.num_warps)
  assert stats["registers"] > 0 and stats["instructions"] > 0 and stats["programs_per_sm"] >= 1
