"""The timing helpers: medians and back-to-back calls, the per-op breakdown of a profile (fake
planes; CPU has no device ops)."""

from __future__ import annotations

import time
from types import SimpleNamespace as NS
import weakref

import jax
import jax.numpy as jnp
import pytest

from sdm_jax.evaluation import timing


def _event(op, ns, **stats):
  return NS(name=op, duration_ns=ns, stats=list(stats.items()))


def test_summarize_device_ops_sums_per_op_over_repeats():
  stream = NS(name="Stream #14(Compute)", events=[
      _event("scatter_kernel", 3e6, name="jit(f)/scan/scatter"),
      _event("gather_kernel", 1e6),
      _event("scatter_kernel", 5e6),
      _event("gather_kernel", 1e6)])
  planes = [NS(name="/host:CPU", lines=[NS(name="python", events=[_event("host", 9e9)])]),
            NS(name="/device:GPU:0", lines=[stream])]
  rows = timing.summarize_device_ops(planes, repeats=2, top=5)
  assert [row["op"] for row in rows] == ["scatter_kernel", "gather_kernel"]
  assert rows[0]["ms"] == pytest.approx(4.0) and rows[0]["count"] == 1
  assert rows[0]["share"] == pytest.approx(0.8)
  assert rows[0]["source"] == "jit(f)/scan/scatter"
  assert timing.summarize_device_ops(planes, repeats=2, top=1)[0]["ms"] == 4.0


def test_summarize_device_ops_prefers_the_xla_ops_line():
  ops = NS(name="XLA Ops", events=[_event("fusion.1", 2e6)])
  stream = NS(name="Stream #1", events=[_event("loop_fusion", 2e6)])
  planes = [NS(name="/device:GPU:0", lines=[stream, ops])]
  assert [row["op"] for row in timing.summarize_device_ops(
      planes, repeats=1, top=5)] == ["fusion.1"]


def test_sources_left_at_the_module_come_from_the_hlo_metadata():
  hlo_names = {"loop_select_fusion_2": "jit(step)/jvp(LM)/block_3/select_n",
               "custom-call.7": "jit(step)/jvp(LM)/block_0/dot_general"}
  stream = NS(name="Stream #1", events=[
      _event("loop_select_fusion_2", 3e6, name="XlaModule:"),
      _event("nvjet_gemm", 2e6, name="XlaModule:", hlo_op="custom-call.7"),
      _event("scatter_kernel", 1e6, name="jit(step)/scan/scatter"),
      _event("unknown_kernel", 1e6, name="XlaModule:")])
  rows = timing.summarize_device_ops([NS(name="/device:GPU:0", lines=[stream])], repeats=1,
                                     top=5, hlo_names=hlo_names)
  assert {row["op"]: row["source"] for row in rows} == {
      "loop_select_fusion_2": "jit(step)/jvp(LM)/block_3/select_n",
      "nvjet_gemm": "jit(step)/jvp(LM)/block_0/dot_general",
      "scatter_kernel": "jit(step)/scan/scatter",  # the profiler's own name stack stays
      "unknown_kernel": "XlaModule:"}


def test_hlo_op_names_read_the_compiled_program():
  """Every instruction with metadata, also under the name of the GPU kernel of a fusion
  ("." and "-" as "_")."""
  jitted = jax.jit(lambda x, w: jnp.tanh(x @ w).sum(0) * 2 + 1)
  text = jitted.lower(jnp.ones((8, 16)), jnp.ones((16, 4))).compile().as_text()
  names = timing.hlo_op_names(text)
  assert any(op.startswith("jit(") and op.endswith("/add") for op in names.values())
  dotted = [name for name in names if "." in name]
  assert dotted and all(name.replace(".", "_") in names for name in dotted)


def test_device_time_by_op_runs_on_any_backend():
  rows = timing.device_time_by_op(lambda: jnp.ones(8) * 2, repeats=1, top=3)
  assert isinstance(rows, list) and len(rows) <= 3


def test_time_call_waits_with_the_given_sync_and_times_calls_back_to_back():
  """Each timed call is waited for once, the back-to-back calls once in all; the back-to-back
  figure is per call."""
  calls, synced = [], []

  def fn():
    calls.append(len(calls))
    time.sleep(0.002)
    return len(calls)

  measured = timing.time_call(fn, warmup=1, repeats=3, sync=synced.append)
  assert len(calls) == 1 + 3 + 3
  assert synced == [1, 2, 3, 4, 7]  # warm-up, three timed calls, the last back-to-back
  assert set(measured) == {"median_ms", "min_ms", "max_ms", "back_to_back_ms"}
  assert 2.0 <= measured["min_ms"] <= measured["median_ms"] <= measured["max_ms"]
  assert 2.0 <= measured["back_to_back_ms"] < 3 * measured["max_ms"]


def test_time_call_holds_one_result_at_a_time():
  """A call's result is dropped before the next call, back to back too, so a benchmark's
  peak memory counts one call's outputs."""
  live = weakref.WeakSet()
  most_live_at_a_call = []

  class Output:
    pass

  def fn():
    most_live_at_a_call.append(len(live))
    out = Output()
    live.add(out)
    return out

  timing.time_call(fn, warmup=2, repeats=4, sync=lambda _: None)
  assert len(most_live_at_a_call) == 2 + 4 + 4
  assert max(most_live_at_a_call) == 0
