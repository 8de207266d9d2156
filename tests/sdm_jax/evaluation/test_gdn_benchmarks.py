"""The GDN op benchmark (`bench_ops --op=gdn`) runs at tiny shapes on CPU and reports what it
promises."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from sdm_jax.evaluation import gdn_benchmarks


def test_benchmark_runs_at_tiny_shapes():
  result = gdn_benchmarks.benchmark(batch=1, seq_len=10, heads=2, key_dim=4, value_dim=3,
                                    chunk_size=4, dtype=jnp.float32, impl="auto", warmup=1,
                                    repeats=2, state_pass="scan", top_ops=2)
  assert result["impl"] == "chunked" and result["state_pass"] == "scan"
  # Empty on CPU (no device ops recorded); lists of the costliest ops on a GPU.
  assert isinstance(result["fwd_top_ops"], list)
  assert isinstance(result["fwd_bwd_top_ops"], list)
  assert result["fwd_ms"] > 0 and result["fwd_bwd_ms"] > 0
  assert (result["batch"], result["seq_len"], result["heads"]) == (1, 10, 2)
  assert (result["key_dim"], result["value_dim"], result["dtype"]) == (4, 3, "float32")
  assert "peak_bytes" in result and "fwd_bwd_temp_bytes" in result


def test_gdn_inputs_follow_the_layer_conventions():
  q, k, v, g, beta = gdn_benchmarks.make_inputs(0, batch=1, seq_len=6, heads=2, key_dim=4,
                                                value_dim=3, dtype=jnp.bfloat16)
  assert q.shape == k.shape == (1, 6, 2, 4) and v.shape == (1, 6, 2, 3)
  assert g.shape == beta.shape == (1, 6, 2) and q.dtype == jnp.bfloat16
  q, k, g, beta = (np.asarray(x, np.float32) for x in (q, k, g, beta))
  np.testing.assert_allclose(np.linalg.norm(q, axis=-1), 1.0, atol=1e-2)
  np.testing.assert_allclose(np.linalg.norm(k, axis=-1), 1.0, atol=1e-2)
  assert (g < 0).all() and (beta > 0).all() and (beta < 1).all()


def test_tiling_benchmark_times_the_pallas_forward_per_tiling():
  result = gdn_benchmarks.benchmark_tilings(
      tilings=["default", "block_v=16;state_block_v=16;output_warps=8"], batch=1, seq_len=16,
      heads=1, key_dim=16, value_dim=32, chunk_size=16, dtype="float32", warmup=0, repeats=1,
      pallas_backward="pallas")
  first, second = result["results"]
  assert (first["block_v"], first["state_block_v"], first["output_warps"]) == (32, 32, 4)
  assert (second["block_v"], second["state_block_v"], second["output_warps"]) == (16, 16, 8)
  assert first["max_rel_difference"] == 0 and second["max_rel_difference"] < 1e-5
  assert first["fwd_ms"] > 0 and second["fwd_ms"] > 0
  assert first["fwd_bwd_ms"] > 0 and second["fwd_bwd_ms"] > 0
  with pytest.raises(ValueError, match="block_v must be a power of two"):
    gdn_benchmarks.benchmark_tilings(tilings=["block_v=64"], batch=1, seq_len=16, heads=1,
                                     key_dim=16, value_dim=32, chunk_size=16,
                                     dtype="float32", warmup=0, repeats=1)
