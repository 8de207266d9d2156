"""Both product-key top-k implementations against a brute-force top-k over all S^2 sums.

The kernel runs in interpret mode on CPU (its semantics); the `gpu` test compiles it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pallas_kernels.product_key import topk_pallas
from pallas_kernels.product_key import topk_xla

IMPLS = {"xla": topk_xla.product_key_topk, "pallas": topk_pallas.product_key_topk}


def brute_force(scores: np.ndarray, k: int):
  """(ids, sums) of the k largest float32 sums over all S^2 slots, lowest id first on ties."""
  s = scores.shape[-1] // 2
  wide = scores.astype(np.float32)
  sums = (wide[..., :s, None] + wide[..., None, s:]).reshape(*scores.shape[:-1], s * s)
  sums = np.where(sums == 0, np.float32(0), sums)  # -0 equals +0
  ids = np.broadcast_to(np.arange(s * s), sums.shape)
  order = np.lexsort((ids, -sums), axis=-1)[..., :k]
  return order.astype(np.int32), np.take_along_axis(sums, order, axis=-1)


def random_scores(seed, sub_keys, dtype, rows=3):
  """Rows of random scores; row 0 rounded to integers (many tied sums), row 1 with a
  constant first half (every pair's order decided by ids within the second half)."""
  rng = np.random.default_rng(seed)
  scores = rng.standard_normal((rows, 2 * sub_keys)).astype(np.float32)
  scores[0] = np.round(scores[0] * 2)
  scores[1, :sub_keys] = 0.5
  return jnp.asarray(scores, dtype)


CASES = ([(4, k) for k in (1, 8, 16)] + [(32, k) for k in (1, 8, 32, 64, 128)]
         + [(512, k) for k in (8, 32, 64, 128)] + [(1024, k) for k in (32, 64, 128)]
         + [(6, 11), (6, 36)])


@pytest.mark.parametrize("sub_keys,k", CASES)
@pytest.mark.parametrize("impl", sorted(IMPLS))
def test_matches_brute_force(impl, sub_keys, k):
  for dtype in (jnp.float32, jnp.bfloat16):
    scores = random_scores(sub_keys * 1000 + k, sub_keys, dtype)
    idx, logits = jax.jit(IMPLS[impl], static_argnums=1)(scores, k)
    want_idx, want_sums = brute_force(np.asarray(scores.astype(jnp.float32)), k)
    assert idx.dtype == jnp.int32 and logits.dtype == dtype and idx.shape == (3, k)
    np.testing.assert_array_equal(np.asarray(idx), want_idx, err_msg=str(dtype))
    np.testing.assert_array_equal(np.asarray(logits.astype(jnp.float32)),
                                  np.asarray(jnp.asarray(want_sums).astype(dtype)
                                             .astype(jnp.float32)))


def test_kernel_gradient_matches_the_xla_path():
  scores = random_scores(5, 32, jnp.float32)
  cotangent = jax.random.normal(jax.random.PRNGKey(0), (3, 24))

  def grad(fn):
    return jax.jit(jax.grad(lambda s: jnp.sum(fn(s, 24)[1] * cotangent)))(scores)

  got, want = grad(topk_pallas.product_key_topk), grad(topk_xla.product_key_topk)
  np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
  assert 0 < int(jnp.sum(got != 0)) <= 2 * 24 * 3  # selected entries only


def test_candidate_pairs_are_the_hyperbola_under_k():
  assert len(topk_xla.candidate_pairs(32, 32)) == 119
  assert len(topk_xla.candidate_pairs(64, 64)) == 280
  assert len(topk_xla.candidate_pairs(16, 4)) == 16  # k = S^2: every pair


@pytest.mark.gpu
@pytest.mark.parametrize("impl", sorted(IMPLS))
@pytest.mark.parametrize("sub_keys,k", [(512, 32), (1024, 64), (128, 64)])
def test_compiled_matches_brute_force(impl, sub_keys, k):
  """On the GPU: the compiled kernel, and the XLA path's tie rule (GPU `lax.top_k`)."""
  scores = random_scores(7, sub_keys, jnp.float32, rows=256)
  idx, logits = jax.jit(IMPLS[impl], static_argnums=1)(scores, k)
  want_idx, want_sums = brute_force(np.asarray(scores), k)
  np.testing.assert_array_equal(np.asarray(idx), want_idx)
  np.testing.assert_array_equal(np.asarray(logits), want_sums)
