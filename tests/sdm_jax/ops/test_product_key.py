from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sdm_jax.ops import product_key_topk

SUB_KEYS = 6  # S: N = 36 slots


def _brute_force_topk(scores, k):
  """Top-k over all S*S sums, formed explicitly."""
  s = scores.shape[-1] // 2
  sums = scores[..., :s, None] + scores[..., None, s:]
  return jax.lax.top_k(sums.reshape(*sums.shape[:-2], s * s), k)


def _scores(seed, shape=(2, 3)):
  return np.random.default_rng(seed).standard_normal((*shape, 2 * SUB_KEYS)).astype(np.float32)


@pytest.mark.parametrize("impl", ["auto", "pallas", "pallas_tpu"])
@pytest.mark.parametrize("k", [1, 4, SUB_KEYS, SUB_KEYS + 5, SUB_KEYS * SUB_KEYS])
def test_matches_brute_force_over_all_slots(k, impl):
  scores = _scores(k)
  idx, logits = jax.jit(lambda s: product_key_topk(s, k, impl=impl))(scores)
  want_logits, want_idx = jax.jit(_brute_force_topk, static_argnums=1)(scores, k)
  assert idx.dtype == jnp.int32 and idx.shape == (2, 3, k) and logits.shape == (2, 3, k)
  np.testing.assert_array_equal(idx, want_idx)
  np.testing.assert_allclose(logits, want_logits, rtol=0, atol=1e-6)
  assert np.all(np.diff(np.asarray(logits), axis=-1) <= 0), "logits must be descending"
  for row in np.asarray(idx).reshape(-1, k):
    assert len(set(row.tolist())) == k and row.min() >= 0 and row.max() < SUB_KEYS**2


def test_gradient_flows_to_selected_scores_like_brute_force():
  scores = _scores(7)
  cotangent = np.random.default_rng(8).standard_normal((2, 3, 5)).astype(np.float32)
  grad = jax.jit(jax.grad(lambda s: jnp.sum(product_key_topk(s, 5)[1] * cotangent)))(scores)
  want = jax.jit(jax.grad(lambda s: jnp.sum(_brute_force_topk(s, 5)[0] * cotangent)))(scores)
  np.testing.assert_allclose(grad, want, rtol=1e-6, atol=1e-6)
  # Only the selected sub-key entries receive gradient.
  assert 0 < int(jnp.sum(grad != 0)) <= 2 * 5 * 6


def test_works_under_jit_and_vmap():
  scores = _scores(3, shape=(4,))
  idx, logits = jax.jit(jax.vmap(lambda s: product_key_topk(s, 3)))(scores)
  want_logits, want_idx = jax.jit(_brute_force_topk, static_argnums=1)(scores, 3)
  np.testing.assert_array_equal(idx, want_idx)
  np.testing.assert_allclose(logits, want_logits, atol=1e-6)


def test_impl_is_checked_and_the_kernels_take_no_float64():
  with pytest.raises(ValueError, match=r"impl must be one of \('auto', 'xla', 'pallas', "
                                       r"'pallas_gpu', 'pallas_tpu'\)"):
    product_key_topk(jnp.ones((2, 12)), 2, impl="triton")
  with jax.enable_x64(True):
    for impl in ("pallas", "pallas_gpu", "pallas_tpu"):
      with pytest.raises(ValueError, match=f"impl='{impl}' takes float32.*got float64"):
        product_key_topk(jnp.ones((2, 12), jnp.float64), 2, impl=impl)


@pytest.mark.parametrize("shape,k,match", [
    ((2, 7), 2, "even"),
    ((2, 12), 37, r"k must be an int in \[1, S\*S\]"),
    ((2, 12), 0, "k must be"),
])
def test_rejects_invalid_input(shape, k, match):
  with pytest.raises(ValueError, match=match):
    product_key_topk(jnp.ones(shape), k)


def test_rejects_integer_scores():
  with pytest.raises(ValueError, match="floating"):
    product_key_topk(jnp.ones((2, 12), jnp.int32), 2)


@pytest.mark.parametrize("k,rows,dtype,want", [
    (64, 1024, jnp.float32, "pallas"), (65, 1024, jnp.float32, "xla"),
    (8, 1, jnp.float32, "pallas"), (64, 8, jnp.bfloat16, "pallas"),
    (8, 1024, jnp.float64, "xla")])
def test_auto_on_gpu_takes_the_kernel_only_where_it_was_faster(monkeypatch, k, rows, dtype,
                                                               want):
  from pallas_kernels import platform
  from pallas_kernels.product_key import topk_pallas, topk_xla
  ran = []
  for name, module in (("pallas", topk_pallas), ("xla", topk_xla)):
    monkeypatch.setattr(module, "product_key_topk",
                        lambda s, k, name=name: ran.append(name) or (s[..., :k], s[..., :k]))
  monkeypatch.setattr(platform, "on_gpu", lambda: True)
  with jax.enable_x64(dtype == jnp.float64):
    product_key_topk(jnp.ones((rows, 2 * 9), dtype), k)
  assert ran == [want]


@pytest.mark.parametrize("on_tpu,impl,want", [
    (True, "pallas", "pallas_tpu"), (False, "pallas", "pallas_gpu"), (True, "auto", "xla"),
    (False, "pallas_tpu", "pallas_tpu"), (True, "pallas_gpu", "pallas_gpu")])
def test_pallas_runs_the_kernel_family_of_the_platform(monkeypatch, on_tpu, impl, want):
  from pallas_kernels import platform
  from pallas_kernels.product_key import topk_pallas, topk_pallas_tpu, topk_xla
  ran = []
  for name, module in (("pallas_gpu", topk_pallas), ("pallas_tpu", topk_pallas_tpu),
                       ("xla", topk_xla)):
    monkeypatch.setattr(module, "product_key_topk",
                        lambda s, k, name=name: ran.append(name) or (s[..., :k], s[..., :k]))
  monkeypatch.setattr(platform, "on_tpu", lambda: on_tpu)
  product_key_topk(jnp.ones((2, 16)), 4, impl=impl)
  assert ran == [want]
