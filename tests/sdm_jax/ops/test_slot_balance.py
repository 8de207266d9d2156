"""The addressing balance of product-key selections: 1 when spread, S when collapsed, and
a gradient that reaches the scores."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from sdm_jax.ops.product_key import product_key_topk
from sdm_jax.ops.slot_balance import product_key_balance

SUB_KEYS = 16


@functools.partial(jax.jit, static_argnums=1)  # one compile, not one per op
def _selection(scores, k):
  idx, _ = product_key_topk(scores, k)
  return product_key_balance(scores, idx)


def test_random_scores_are_near_balanced_and_one_slot_for_all_is_not():
  scores = jax.random.normal(jax.random.PRNGKey(0), (4, 256, 2, 2 * SUB_KEYS))
  assert abs(float(_selection(scores, 8)) - 1.0) < 0.05
  collapsed = jnp.zeros_like(scores).at[..., 3].set(30.0).at[..., SUB_KEYS + 5].set(30.0)
  np.testing.assert_allclose(float(_selection(collapsed, 1)), SUB_KEYS, rtol=1e-5)


def test_its_gradient_lowers_the_most_picked_sub_keys():
  # Every token prefers sub-key 0 of each half a little: picked most, so its scores must
  # fall along the negative gradient; scores of the least picked rise.
  scores = jax.random.normal(jax.random.PRNGKey(1), (2, 128, 1, 2 * SUB_KEYS))
  scores = scores.at[..., 0].add(2.0).at[..., SUB_KEYS].add(2.0)
  idx, _ = jax.jit(product_key_topk, static_argnums=1)(scores, 4)
  balance, grad = jax.jit(jax.value_and_grad(lambda s: product_key_balance(s, idx)))(scores)
  assert float(balance) > 1.2
  mean_grad = np.asarray(jnp.mean(grad, axis=(0, 1, 2)))
  assert mean_grad[0] > 0 and mean_grad[SUB_KEYS] > 0
  assert np.isfinite(np.asarray(grad)).all()
