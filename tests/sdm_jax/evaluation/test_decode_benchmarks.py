"""`sdm_jax.evaluation.decode_benchmarks`: the cache it times against, and the layer it
times. The whole benchmark runs end to end in tests/experiments/test_bench_decode.py."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sdm_jax.evaluation.decode_benchmarks import random_cache, time_decode
from sdm_jax.models.config import LMConfig


def test_the_cache_is_random_and_every_attention_slot_holds_a_seen_position():
  shapes = {"positions": jax.ShapeDtypeStruct((2, 4), jnp.int32),
            "keys": jax.ShapeDtypeStruct((2, 4, 3), jnp.float32)}
  cache = random_cache(shapes, 10, jax.random.PRNGKey(0))
  np.testing.assert_array_equal(cache["positions"], [[6, 7, 8, 9]] * 2)
  assert cache["keys"].shape == (2, 4, 3) and cache["keys"].dtype == jnp.float32
  assert float(jnp.std(cache["keys"])) > 0.1


def test_one_layer_is_timed():
  with pytest.raises(ValueError, match="num_layers must be 1"):
    time_decode(LMConfig(num_layers=2, pattern="G"), 1, 16, warmup=0, repeats=1)


def test_the_op_profile_is_of_the_scanned_steps_per_token(monkeypatch):
  from sdm_jax.evaluation import decode_benchmarks
  profiled = []

  def fake_profile(fn, *, top):
    y, cache = fn()  # one call of the scanned steps: a whole scan's outputs
    profiled.append(y.shape)
    steps = decode_benchmarks.SCAN_STEPS
    return [{"op": "kernel", "ms": 0.5 * steps, "count": 2.0 * steps, "share": 1.0,
             "source": ""}][:top]

  monkeypatch.setattr(decode_benchmarks.timing, "device_time_by_op", fake_profile)
  config = LMConfig(d_model=32, num_layers=1, pattern="A", num_heads=2, max_seq_len=64)
  result = time_decode(config, 1, 16, warmup=0, repeats=1, top_ops=1)
  assert profiled == [(1, 1, 32)]
  assert result["top_ops"] == [{"op": "kernel", "ms": 0.5, "count": 2.0, "share": 1.0,
                                "source": ""}]
