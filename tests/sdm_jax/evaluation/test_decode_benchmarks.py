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
