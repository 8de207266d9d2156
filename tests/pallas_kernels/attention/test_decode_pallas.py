"""The split-cache decode attention kernel against its XLA twin (`decode_xla`): splits and
ragged caches, empty and out-of-window slots, queries that see nothing, dtypes, errors; the
fused decode step `append_and_attend`: its errors and GPU lowering (its values against the
layer's path are checked in tests/sdm_jax/layers/test_attention.py).

On CPU the kernel runs in interpret mode; the `gpu` test compiles it with Triton. The
dispatch (`impl=`) and the layers' decode are checked in tests/sdm_jax.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pallas_kernels.attention import decode_pallas
from pallas_kernels.attention import decode_xla


def _inputs(seed, *, batch, cache_len, heads, head_dim, dtype=jnp.float32):
  """Random q, k, v and a ring-buffer cache: sequence b holds positions in rotated slot
  order, the last sequence only its first cache_len // 3 slots (the rest empty, -1)."""
  rng = np.random.default_rng(seed)
  q = jnp.asarray(rng.normal(size=(batch, 1, heads, head_dim)), dtype)
  k = jnp.asarray(rng.normal(size=(batch, cache_len, heads, head_dim)), dtype)
  v = jnp.asarray(rng.normal(size=(batch, cache_len, heads, head_dim)), dtype)
  positions = np.stack([np.roll(np.arange(cache_len), 5 * b) for b in range(batch)])
  positions[-1, cache_len // 3:] = -1
  q_positions = positions.max(axis=1, keepdims=True)
  return q, k, v, jnp.asarray(q_positions, jnp.int32), jnp.asarray(positions, jnp.int32)


CONFIGS = [
    decode_pallas.KernelConfig(),  # the default: here every 64-slot block is a split
    decode_pallas.KernelConfig(block_k=16, min_programs=64),  # several splits, ragged tail
    decode_pallas.KernelConfig(block_k=32, num_warps=2, min_programs=1),  # one split
]


@pytest.mark.parametrize("config", CONFIGS, ids=str)
@pytest.mark.parametrize("window", [None, 9])
def test_kernel_matches_the_twin(config, window):
  q, k, v, q_pos, k_pos = _inputs(0, batch=3, cache_len=150, heads=2, head_dim=16)
  got = decode_pallas.single_query_attention(q, k, v, q_pos, k_pos, window=window,
                                             config=config)
  want = decode_xla.single_query_attention(q, k, v, q_pos, k_pos, window=window)
  assert got.shape == want.shape == q.shape and got.dtype == q.dtype
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_splits_cover_the_cache_with_whole_blocks():
  config = decode_pallas.KernelConfig(block_k=64, min_programs=512)
  for cache_len, programs in [(150, 6), (8192, 16), (131072, 128), (131072, 16), (1, 1)]:
    span = decode_pallas.split_span(cache_len, programs, config)
    splits = -(-cache_len // span)
    assert span % config.block_k == 0 and splits * span >= cache_len > (splits - 1) * span
    assert programs * splits >= min(512, programs * -(-cache_len // config.block_k))


def test_a_query_that_sees_nothing_gets_zeros_and_bf16_rounds_once():
  q, k, v, q_pos, k_pos = _inputs(1, batch=2, cache_len=40, heads=2, head_dim=32,
                                  dtype=jnp.bfloat16)
  q_pos = q_pos.at[0, 0].set(-5)  # before every stored position
  config = decode_pallas.KernelConfig(block_k=16, min_programs=8)
  got = decode_pallas.single_query_attention(q, k, v, q_pos, k_pos, scale=0.3, config=config)
  want = decode_xla.single_query_attention(q, k, v, q_pos, k_pos, scale=0.3)
  assert got.dtype == jnp.bfloat16
  np.testing.assert_array_equal(np.asarray(got[0], np.float32), 0.0)
  np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32),
                             rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("kwargs,match", [
    (dict(head_dim=8), "head dim D must be a power of two >= 16"),
    (dict(head_dim=48), "head dim D must be a power of two >= 16"),
    (dict(window=0), "window must be >= 1"),
    (dict(config=decode_pallas.KernelConfig(block_k=24)), "KernelConfig.block_k"),
    (dict(config=decode_pallas.KernelConfig(min_programs=0)), "KernelConfig.min_programs"),
])
def test_rejects_what_it_cannot_take(kwargs, match):
  head_dim = kwargs.pop("head_dim", 16)
  q, k, v, q_pos, k_pos = _inputs(2, batch=1, cache_len=8, heads=1, head_dim=head_dim)
  with pytest.raises(ValueError, match=match):
    decode_pallas.single_query_attention(q, k, v, q_pos, k_pos, **kwargs)


@pytest.mark.parametrize("window", [None, 2048])
def test_gpu_kernel_lowers_for_gpu_without_copying_the_cache(window):
  """The Pallas-to-Triton lowering at the decode benchmark's largest shape (B = 8, 128K
  slots, 16 heads of 128, bf16), on a CPU: two Triton calls (the splits, their combine)
  and no transpose of the cache."""
  sd = jax.ShapeDtypeStruct
  cache = sd((8, 131072, 16, 128), jnp.bfloat16)
  attend = lambda q, k, v, q_pos, k_pos: decode_pallas.single_query_attention(  # noqa: E731
      q, k, v, q_pos, k_pos, window=window, interpret=False)
  lowered = jax.jit(attend).trace(sd((8, 1, 16, 128), jnp.bfloat16), cache, cache,
                                  sd((8, 1), jnp.int32), sd((8, 131072), jnp.int32)
                                  ).lower(lowering_platforms=("cuda",)).as_text()
  assert lowered.count("__gpu$xla.gpu.triton") == 2
  assert "transpose" not in lowered


def _step_operands(*, batch=1, cache_len=8, heads=1, head_dim=16, dtype=jnp.float32,
                   qkv_rows=None):
  """Shapes of `append_and_attend`'s operands (qkv, cache k, v, positions, positions)."""
  sd = jax.ShapeDtypeStruct
  cache = sd((batch, cache_len, heads, head_dim), dtype)
  return (sd((batch if qkv_rows is None else qkv_rows, 3, heads, head_dim), dtype), cache,
          cache, sd((batch, cache_len), jnp.int32), sd((batch, 1), jnp.int32))


@pytest.mark.parametrize("change,kwargs,match", [
    (dict(head_dim=8), {}, "head dim D must be a power of two >= 16"),
    (dict(batch=2, qkv_rows=1), {}, "qkv must be"),
    ({}, dict(rope_inv_freq=jnp.ones(16)), "rope_inv_freq must be"),
    ({}, dict(q_norm_scale=jnp.ones(16)), "given together"),
    ({}, dict(window=0), "window must be >= 1"),
])
def test_append_and_attend_rejects_what_it_cannot_take(change, kwargs, match):
  operands = _step_operands(**change)
  kwargs = dict(dict(rope_inv_freq=jnp.ones(operands[1].shape[-1] // 2)), **kwargs)
  with pytest.raises(ValueError, match=match):
    jax.eval_shape(lambda *a: decode_pallas.append_and_attend(*a, **kwargs), *operands)


def test_append_and_attend_lowers_for_gpu_as_two_calls_updating_the_cache_in_place():
  """At the decode benchmark's largest shape, on a CPU: two Triton calls (the step, the
  splits' combine), no transpose, and the cache's three arrays aliased to its outputs (so a
  donated cache is never copied)."""
  operands = _step_operands(batch=8, cache_len=131072, heads=16, head_dim=128,
                            dtype=jnp.bfloat16, qkv_rows=9)
  scale = jax.ShapeDtypeStruct((128,), jnp.float32)

  def step(*args):
    *args, q_scale, k_scale = args
    return decode_pallas.append_and_attend(*args, rope_inv_freq=jnp.ones(64),
                                           q_norm_scale=q_scale, k_norm_scale=k_scale,
                                           interpret=False)

  lowered = jax.jit(step, donate_argnums=(1, 2, 3)).trace(*operands, scale, scale).lower(
      lowering_platforms=("cuda",)).as_text()
  assert lowered.count("__gpu$xla.gpu.triton") == 2
  assert "transpose" not in lowered
  assert sorted(re.findall(r"tf.aliasing_output = (\d+)", lowered)) == ["1", "2", "3"]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [jnp.bfloat16, jnp.float32])
@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_compiled_kernel_matches_the_twin(dtype, config):
  """On the GPU: 16 heads of 128, a cache of 5,000 slots (not a multiple of any block)."""
  q, k, v, q_pos, k_pos = _inputs(3, batch=2, cache_len=5000, heads=16, head_dim=128,
                                  dtype=dtype)
  for window in (None, 700):
    got = jax.jit(lambda *a: decode_pallas.single_query_attention(  # noqa: B023
        *a, window=window, config=config))(q, k, v, q_pos, k_pos)
    want = jax.jit(lambda *a: decode_xla.single_query_attention(  # noqa: B023
        *a, window=window))(q, k, v, q_pos, k_pos)
    tolerance = 1e-4 if dtype == jnp.float32 else 1e-2
    np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32),
                               rtol=tolerance, atol=tolerance)
