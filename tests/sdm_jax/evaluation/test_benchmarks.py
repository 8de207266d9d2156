"""The SDM benchmarks run end to end at tiny shapes on CPU and report what they promise."""

from __future__ import annotations

import jax
import pytest

from pallas_kernels.product_key import topk_pallas
from sdm_jax.evaluation import attention_benchmarks
from sdm_jax.evaluation import sdm_benchmarks
from sdm_jax.evaluation import tiling
from sdm_jax.evaluation import topk_benchmarks
from sdm_jax.ops import dispatch

TINY = dict(batch=1, seq_len=40, heads=1, slots=64, writes=4, reads=4, chunk_size=16,
            dtype="bfloat16", warmup=0, repeats=1)


@pytest.mark.parametrize("impl,table_dtype", [("chunked", "float32"), ("pallas", "bfloat16")])
def test_op_benchmark_times_both_phases(impl, table_dtype):
  result = sdm_benchmarks.benchmark(value_dim=16, impl=impl, table_dtype=table_dtype, **TINY)
  assert result["impl"] == (dispatch.kernel_family() if impl == "pallas" else impl)
  assert result["table_dtype"] == table_dtype
  assert result["table_bytes"] == 64 * 16 * (2 if table_dtype == "bfloat16" else 4)
  for key in ("fwd_ms", "fwd_bwd_ms", "phase1_fwd_ms", "phase2_fwd_ms", "phase1_fwd_bwd_ms",
              "phase2_fwd_bwd_ms"):
    assert result[key] > 0, key


def test_layer_benchmark_counts_every_parameter():
  result = sdm_benchmarks.benchmark_layer(model_dim=16, impl="auto", **TINY)
  on_gpu = jax.default_backend() == "gpu"
  assert result["impl"] == ("pallas_gpu" if on_gpu else "chunked")
  assert result["table_dtype"] == ("bfloat16" if on_gpu else "float32")  # bf16 activations
  assert result["fwd_ms"] > 0 and result["fwd_bwd_ms"] > 0
  # key and query projections (d -> 2S = 16, with bias), value, gate and output (d -> d),
  # the gates (2 d + 2 H), the LayerNorm (2 d) and M0 (N x Dv).
  d, two_s = 16, 16
  assert result["params"] == 2 * (d * two_s + two_s) + 3 * d * d + 2 * d + 2 + 2 * d + 64 * 16


def test_topk_benchmark_times_every_implementation_and_tiling():
  result = topk_benchmarks.benchmark(
      rows=[3], sub_keys=[8], ks=[4, 100], dtype="float32",
      tilings=["default", "block_rows=2;half_select=scan"], warmup=0, repeats=1)
  (shape,) = result["results"]  # k = 100 > S * S = 64 is skipped
  assert (shape["rows"], shape["sub_keys"], shape["k"]) == (3, 8, 4)
  for key in ("xla_fwd_ms", "xla_fwd_back_to_back_ms", "xla_fwd_bwd_ms", "xla_fwd_scan_ms",
              "lax_top_k_2s_fwd_ms", "lax_top_k_2s_back_to_back_ms"):
    assert shape[key] > 0, key
  default, scan = shape["pallas_gpu"]
  assert default["tiling"] == "default"
  assert default["block_rows"] == topk_pallas.default_config(8, 4, 3).block_rows
  assert (scan["block_rows"], scan["half_select"]) == (2, "scan")
  for kernel in (default, scan):
    assert kernel["same_ids_as_xla"]
    for key in ("fwd_ms", "fwd_back_to_back_ms", "fwd_bwd_ms", "fwd_scan_ms",
                "speedup_over_lax_top_k", "speedup_over_lax_top_k_back_to_back",
                "speedup_over_xla"):
      assert kernel[key] > 0, key
    # Each ratio divides like by like: waited-for medians, or back-to-back calls.
    assert kernel["speedup_over_lax_top_k"] == pytest.approx(
        shape["lax_top_k_2s_fwd_ms"] / kernel["fwd_ms"])
    assert kernel["speedup_over_lax_top_k_back_to_back"] == pytest.approx(
        shape["lax_top_k_2s_back_to_back_ms"] / kernel["fwd_back_to_back_ms"])
  assert shape["fastest_tiling"] in (default["tiling"], scan["tiling"])


def test_topk_benchmark_times_scans_only_up_to_scan_max_rows(monkeypatch):
  monkeypatch.setattr(topk_benchmarks, "SCAN_MAX_ROWS", 2)
  monkeypatch.setattr(topk_benchmarks, "SCAN_STEPS", 3)
  few, many = topk_benchmarks.benchmark(rows=[2, 3], sub_keys=[4], ks=[2], dtype="float32",
                                        warmup=0, repeats=1)["results"]
  assert few["xla_fwd_scan_ms"] > 0 and few["pallas_gpu"][0]["fwd_scan_ms"] > 0
  assert "xla_fwd_scan_ms" not in many and "fwd_scan_ms" not in many["pallas_gpu"][0]


def test_decode_attention_benchmark_times_xla_and_each_tiling():
  result = attention_benchmarks.benchmark(
      batch=2, cache_len=40, heads=2, head_dim=16, dtype="float32", window=9,
      tilings=["default", "block_k=16;min_programs=8"], warmup=0, repeats=1)
  assert result["xla_ms"] > 0 and result["cache_bytes"] == 2 * 2 * 40 * 2 * 16 * 4
  default, small = result["pallas_gpu"]
  assert (default["block_k"], small["block_k"], small["min_programs"]) == (64, 16, 8)
  for kernel in (default, small):
    assert kernel["ms"] > 0 and kernel["cache_gb_per_s"] > 0
    assert kernel["max_abs_difference"] < 1e-5


def test_tiling_benchmark_times_each_tiling_on_one_plan():
  result = sdm_benchmarks.benchmark_tilings(
      tilings=["default", "block_cols=16;row_tile=32"], value_dim=32,
      **{k: v for k, v in TINY.items() if k != "dtype"}, dtype="float32")
  first, second = result["results"]
  assert (first["block_cols"], second["block_cols"], second["row_tile"]) == (32, 16, 32)
  assert first["max_rel_grad_difference"] == 0 and second["max_rel_grad_difference"] < 1e-3
  assert first["phase2_fwd_bwd_ms"] > 0 and second["phase2_fwd_bwd_ms"] > 0


def test_tiling_specs_are_checked():
  assert sdm_benchmarks.parse_tiling("num_warps=8", 64).num_warps == 8
  topk = tiling.parse_tiling("half_select=groups;block_rows=4",
                                   topk_pallas.KernelConfig())
  assert (topk.half_select, topk.block_rows, topk.pick) == ("groups", 4, "argmax")
  with pytest.raises(ValueError, match="field=value"):
    tiling.parse_tiling("block_rows=four", topk_pallas.KernelConfig())
  with pytest.raises(ValueError, match="field=value"):
    sdm_benchmarks.parse_tiling("warps=8", 64)
  with pytest.raises(ValueError, match="block_cols must divide"):
    sdm_benchmarks.parse_tiling("block_cols=64", 32)
  assert sdm_benchmarks.parse_tiling("row_tile=64", 64).row_tile == 64
  # Fields whose default is None take ints too.
  rows = sdm_benchmarks.parse_tiling("backward_rows_cols=128;backward_rows_warps=8", 256)
  row_config = rows.backward_rows_config()
  assert (row_config.block_cols, row_config.num_warps) == (128, 8)
  assert (rows.block_cols, rows.num_warps) == (64, 4)
  with pytest.raises(ValueError, match="row_tile must be a power of two"):
    sdm_benchmarks.parse_tiling("row_tile=48", 64)
  # Bool fields take true or false, not any (truthy) string.
  assert sdm_benchmarks.parse_tiling("prefetch_entries=true", 64).prefetch_entries is True
  assert sdm_benchmarks.parse_tiling("prefetch_entries=false", 64).prefetch_entries is False
  with pytest.raises(ValueError, match="true or false"):
    sdm_benchmarks.parse_tiling("prefetch_entries=1", 64)
