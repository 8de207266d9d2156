"""The peer benchmarks: what they need is said when it is missing; fla's Hopper guard. (They
run on the H200 only: PyTorch is not a dependency here, and fla autotunes for minutes.)"""

from __future__ import annotations

import importlib.util
from types import SimpleNamespace as NS

import pytest

from sdm_jax.evaluation import peer_benchmarks


@pytest.mark.skipif(importlib.util.find_spec("fla") is not None,
                    reason="flash-linear-attention is installed here")
def test_fla_benchmark_says_what_to_install():
  with pytest.raises(ImportError, match="needs (PyTorch|flash-linear-attention)"):
    peer_benchmarks.benchmark_fla_gdn(batch=1, seq_len=8, heads=1, key_dim=16, value_dim=16,
                                      dtype="bfloat16", warmup=0, repeats=1)


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None,
                    reason="PyTorch is installed here")
def test_sdpa_benchmark_says_what_to_install():
  with pytest.raises(ImportError, match="--sdpa_peer needs PyTorch"):
    peer_benchmarks.benchmark_sdpa_decode(batch=1, context=8, d_model=32, heads=2, warmup=0,
                                          repeats=1, device="cpu")


def test_hopper_guard_is_bypassed_only_where_it_would_trip():
  old_triton = NS(TRITON_ABOVE_3_7_1=False)
  assert peer_benchmarks._bypass_hopper_guard(old_triton)
  assert old_triton.TRITON_ABOVE_3_7_1
  assert not peer_benchmarks._bypass_hopper_guard(NS(TRITON_ABOVE_3_7_1=True))
  assert not peer_benchmarks._bypass_hopper_guard(NS())  # a version without the guard


def test_cuda_kernel_times_sum_per_kernel_and_skip_host_events():
  cuda, cpu = object(), object()
  events = [NS(name="chunk_fwd", device_type=cuda, device_time_total=300.0),
            NS(name="chunk_fwd", device_type=cuda, device_time_total=300.0),
            NS(name="solve", device_type=cuda, device_time_total=150.0),
            NS(name="cudaLaunchKernel", device_type=cpu, device_time_total=0.0)]
  calls = []

  class Profile:
    def __init__(self, activities):
      assert activities == ["cuda activity"]
    def __enter__(self):
      return self
    def __exit__(self, *exc):
      return False
    def events(self):
      return events

  torch = NS(cuda=NS(synchronize=lambda: None),
             profiler=NS(profile=Profile, ProfilerActivity=NS(CUDA="cuda activity")),
             autograd=NS(DeviceType=NS(CUDA=cuda)))
  rows = peer_benchmarks._cuda_time_by_kernel(torch, lambda: calls.append(1), repeats=3,
                                              top=5)
  assert len(calls) == 4  # one warm call, then the traced ones
  assert [r["op"] for r in rows] == ["chunk_fwd", "solve"]
  assert rows[0]["ms"] == pytest.approx(0.6 / 3) and rows[0]["count"] == pytest.approx(2 / 3)
  assert rows[1]["share"] == pytest.approx(0.2)
