"""Attention against a naive per-query softmax, with and without a window."""

from __future__ import annotations

import functools
import re

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pallas_kernels.attention import decode_pallas
from pallas_kernels.attention import decode_xla
from sdm_jax.layers.attention import AttentionCache, causal_attention, init_attention_cache
from sdm_jax.layers.attention import masked_attention, write_cache
from sdm_jax.layers.norms import rms_norm
from sdm_jax.layers.rotary import apply_rotary, inverse_frequencies
from sdm_jax.ops.decode_attention import append_and_attend, single_query_attention


def naive_attention(q, k, v, window):
  """One query at a time, in float64 numpy: the definition."""
  q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
  batch, length, heads, dim = q.shape
  out = np.zeros_like(q)
  for b in range(batch):
    for h in range(heads):
      for t in range(length):
        first = 0 if window is None else max(0, t - window + 1)
        scores = k[b, first:t + 1, h] @ q[b, t, h] / np.sqrt(dim)
        weights = np.exp(scores - scores.max())
        out[b, t, h] = weights @ v[b, first:t + 1, h] / weights.sum()
  return out


def random_qkv(seed, shape=(2, 13, 3, 8)):
  keys = jax.random.split(jax.random.PRNGKey(seed), 3)
  return [jax.random.normal(key, shape, jnp.float32) for key in keys]


@pytest.mark.parametrize("window", [None, 1, 4, 13, 40])
def test_causal_attention_matches_naive(window):
  q, k, v = random_qkv(0)
  expected = naive_attention(q, k, v, window)
  np.testing.assert_allclose(causal_attention(q, k, v, window=window), expected, rtol=1e-5,
                             atol=1e-5)
  positions = jnp.broadcast_to(jnp.arange(q.shape[1]), q.shape[:2])
  np.testing.assert_allclose(masked_attention(q, k, v, positions, positions, window=window),
                             expected, rtol=1e-5, atol=1e-5)


def test_ring_buffer_keeps_the_last_window_positions():
  q, k, v = random_qkv(1, (1, 11, 1, 4))
  cache = init_attention_cache(1, 4, 1, 4, jnp.float32)
  for t in range(11):
    cache = write_cache(cache, k[:, t:t + 1], v[:, t:t + 1], jnp.array([[t]]))
  assert sorted(np.asarray(cache.positions[0]).tolist()) == [7, 8, 9, 10]
  np.testing.assert_array_equal(cache.k[0, 10 % 4], k[0, 10])


def test_invalid_window_is_rejected():
  q, k, v = random_qkv(2)
  with pytest.raises(ValueError, match="window"):
    causal_attention(q, k, v, window=0)


class MaskedAttentionVariantsTest(chex.TestCase):

  @chex.variants(with_jit=True, without_jit=True)
  def test_jitted_and_not_agree_with_the_definition(self):
    q, k, v = random_qkv(3, (2, 9, 2, 4))
    positions = jnp.broadcast_to(jnp.arange(9), (2, 9))
    attend = self.variant(functools.partial(masked_attention, window=4))
    out = attend(q, k, v, positions, positions)
    chex.assert_shape(out, q.shape)
    chex.assert_trees_all_close(out, naive_attention(q, k, v, 4).astype(np.float32),
                                rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("window", [None, 64])
def test_cudnn_matches_the_xla_path(window):
  """The GPU default for bf16 (cuDNN flash attention) against `masked_attention`."""
  q, k, v = (x.astype(jnp.bfloat16) for x in random_qkv(4, (2, 256, 4, 64)))
  cudnn = causal_attention(q, k, v, window=window, implementation="cudnn")
  xla = causal_attention(q, k, v, window=window, implementation="xla")
  chex.assert_trees_all_equal_shapes_and_dtypes(cudnn, xla)
  np.testing.assert_allclose(np.asarray(cudnn, np.float32), np.asarray(xla, np.float32),
                             rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("impl", ["xla", "pallas"])
@pytest.mark.parametrize("window", [None, 5])
def test_single_query_attention_equals_masked_attention(window, impl):
  """The decode paths against the reference, with empty slots (-1) and a ring buffer whose
  slots hold positions out of order."""
  q, k, v = random_qkv(3, (2, 16, 3, 16))
  q = q[:, :1]
  cache_positions = jnp.asarray(np.stack([np.r_[16:24, 8:16], np.r_[0:10, [-1] * 6]]),
                                jnp.int32)
  positions = jnp.asarray([[23], [9]], jnp.int32)
  want = masked_attention(q, k, v, positions, cache_positions, window=window)
  got = single_query_attention(q, k, v, positions, cache_positions, window=window, impl=impl)
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_single_query_attention_materializes_nothing_of_the_cache_size():
  """One query against a long bf16 cache: the compiled step makes no array as large as the
  cache (XLA's dot over [B, L, H, D] had transposed the whole cache, twice, every step)."""
  q = jnp.ones((2, 1, 4, 64), jnp.bfloat16)
  cache = jnp.ones((2, 4096, 4, 64), jnp.bfloat16)
  positions = jnp.full((2, 1), 4096, jnp.int32)
  cache_positions = jnp.broadcast_to(jnp.arange(4096, dtype=jnp.int32), (2, 4096))
  hlo = jax.jit(functools.partial(single_query_attention, impl="xla")).lower(
      q, cache, cache, positions, cache_positions).compile().as_text()
  instructions = [line for line in hlo[hlo.index("ENTRY"):].splitlines()
                  if " = " in line and "parameter(" not in line]

  def size(line):  # elements of the instruction's result: `%name = f32[2,4096,4]{...} op(`
    dims = re.match(r"\s*(ROOT )?%\S+ = \w+\[([\d,]*)\]", line)
    return int(np.prod([int(d) for d in dims.group(2).split(",") if d])) if dims else 0

  assert instructions
  large = [line for line in instructions if size(line) >= cache.size]
  assert not large, large
  out = single_query_attention(q, cache, cache * 2, positions, cache_positions, impl="xla")
  np.testing.assert_allclose(np.asarray(out, np.float32), 2.0)


def _decode_step_inputs(seed, *, batch_positions, cache_len, heads, head_dim, dtype):
  """Raw projections of one new token per sequence and a ring-buffer cache holding the
  cache_len positions before it (fewer at the start: the rest empty, -1). The first
  sequence's new slot holds an older position, which the step overwrites."""
  rng = np.random.default_rng(seed)
  batch = len(batch_positions)
  normal = lambda *shape: jnp.asarray(rng.normal(size=shape), dtype)  # noqa: E731
  q, k, v = (normal(batch, 1, heads, head_dim) for _ in range(3))
  cache = init_attention_cache(batch, cache_len, heads, head_dim, dtype)
  cache = cache._replace(k=normal(batch, cache_len, heads, head_dim),
                         v=normal(batch, cache_len, heads, head_dim))
  stored = np.full((batch, cache_len), -1)
  for b, position in enumerate(batch_positions):
    for p in range(max(0, position - cache_len), position):
      stored[b, p % cache_len] = p
  cache = cache._replace(positions=jnp.asarray(stored, jnp.int32))
  positions = jnp.asarray(batch_positions, jnp.int32)[:, None]
  scales = [jnp.asarray(1 + 0.3 * rng.normal(size=head_dim), jnp.float32) for _ in range(2)]
  return q, k, v, cache, positions, scales


def _norm_rotary_write_attend(q, k, v, cache, positions, *, scales, base, window):
  """The layer's decode path without the kernel: the reference of `append_and_attend`."""
  if scales is not None:
    q, k = rms_norm(q, scales[0]), rms_norm(k, scales[1])
  q, k = apply_rotary(q, positions, base), apply_rotary(k, positions, base)
  cache = write_cache(cache, k, v, positions)
  o = decode_xla.single_query_attention(q, cache.k, cache.v, positions, cache.positions,
                                        window=window)
  return o, cache


def _append_and_attend(q, k, v, cache, positions, *, scales, base, window, padded_rows=0,
                       **kwargs):
  """`append_and_attend` of q, k, v stacked, with `padded_rows` rows of noise appended (the
  kernel must ignore them and return zero rows for them)."""
  qkv = jnp.concatenate([q, k, v], axis=1)
  noise = jax.random.normal(jax.random.PRNGKey(9), (padded_rows, *qkv.shape[1:]), qkv.dtype)
  norm = {} if scales is None else dict(q_norm_scale=scales[0], k_norm_scale=scales[1])
  o, *updated = append_and_attend(jnp.concatenate([qkv, 100 * noise]), *cache, positions,
                                  window=window,
                                  rope_inv_freq=inverse_frequencies(q.shape[-1], base),
                                  **norm, **kwargs)
  return o, AttentionCache(*updated)


def _assert_steps_close(got_o, got, want_o, want, tolerance):
  """Two decode steps' outputs and caches agree: positions exactly, o, k, v to tolerance."""
  np.testing.assert_array_equal(got.positions, want.positions)
  for a, b in [(got_o, want_o), (got.k, want.k), (got.v, want.v)]:
    np.testing.assert_allclose(np.asarray(a, np.float32), np.asarray(b, np.float32),
                               rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("window,normalize,dtype,padded_rows", [
    (None, True, jnp.float32, 0), (7, True, jnp.float32, 1), (None, False, jnp.float32, 0),
    (7, True, jnp.bfloat16, 2)])
def test_append_and_attend_equals_norm_rotary_write_and_attend(window, normalize, dtype,
                                                               padded_rows):
  """The fused decode step (interpret mode here) against its reference on random inputs:
  several splits (blocks of 16, the new slot in a later one), a wrapped ring buffer, a cache
  still filling, rows of qkv past the batch (ignored)."""
  q, k, v, cache, positions, scales = _decode_step_inputs(
      0, batch_positions=[45, 7, 33], cache_len=40, heads=2, head_dim=16, dtype=dtype)
  scales = scales if normalize else None
  config = decode_pallas.KernelConfig(block_k=16, min_programs=8)
  got_o, got = _append_and_attend(q, k, v, cache, positions, scales=scales, base=100.0,
                                  window=window, config=config, padded_rows=padded_rows)
  assert got_o.shape[0] == q.shape[0] + padded_rows
  np.testing.assert_array_equal(np.asarray(got_o[q.shape[0]:], np.float32), 0.0)
  got_o = got_o[:q.shape[0]]
  want_o, want = _norm_rotary_write_attend(q, k, v, cache, positions, scales=scales,
                                           base=100.0, window=window)
  chex.assert_trees_all_equal_shapes_and_dtypes((got_o, got), (want_o, want))
  _assert_steps_close(got_o, got, want_o, want, 1e-5 if dtype == jnp.float32 else 2e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [jnp.bfloat16, jnp.float32])
def test_compiled_append_and_attend_equals_its_reference(dtype):
  """On the GPU, jitted with the cache donated: 16 heads of 128, 5,000 slots, with and
  without a window."""
  for window in (None, 700):
    inputs = _decode_step_inputs(1, batch_positions=[5003, 4100], cache_len=5000, heads=16,
                                 head_dim=128, dtype=dtype)
    *args, scales = inputs
    kwargs = dict(scales=scales, base=10_000.0, window=window)
    want_o, want = jax.jit(functools.partial(_norm_rotary_write_attend, **kwargs))(*args)
    got_o, got = jax.jit(functools.partial(_append_and_attend, **kwargs),
                         donate_argnums=3)(*args)
    _assert_steps_close(got_o, got, want_o, want, 1e-4 if dtype == jnp.float32 else 2e-2)
