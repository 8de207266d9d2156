"""The learning-rate schedule, the weight-decay mask and M0's learning-rate multiplier."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import pytest

from sdm_jax.training.config import TrainConfig
from sdm_jax.training.optim import (decay_mask, initial_memory_mask, learning_rate_schedule,
                                    make_optimizer, optimizer_for)


def test_schedule_warms_up_then_decays_to_the_floor():
  schedule = learning_rate_schedule(1e-3, warmup_steps=10, total_steps=100, min_lr_ratio=0.1)
  assert float(schedule(0)) == 0.0
  assert float(schedule(5)) == pytest.approx(5e-4)
  assert float(schedule(10)) == pytest.approx(1e-3)
  assert float(schedule(100)) == pytest.approx(1e-4)
  assert float(schedule(50)) < float(schedule(20))


def test_schedule_rejects_bad_warmup():
  with pytest.raises(ValueError, match="warmup_steps"):
    learning_rate_schedule(1e-3, warmup_steps=20, total_steps=10)


def test_decay_mask_skips_gains_biases_gates_and_the_sdm_table():
  params = {"dense": {"kernel": jnp.ones((2, 3)), "bias": jnp.ones(3)},
            "norm": {"scale": jnp.ones(3)}, "gdn": {"A_log": jnp.ones((4,)),
                                                      "dt_bias": jnp.ones((4,))},
            "sdm": {"M0": jnp.ones((1, 4, 2))}}
  mask = decay_mask(params)
  assert mask["dense"]["kernel"] is True
  assert not any([mask["dense"]["bias"], mask["norm"]["scale"], mask["gdn"]["A_log"],
                  mask["gdn"]["dt_bias"], mask["sdm"]["M0"]])


def _random_tree(seed: int) -> dict:
  keys = jax.random.split(jax.random.PRNGKey(seed), 4)
  return {"dense": {"kernel": jax.random.normal(keys[0], (3, 4)),
                    "bias": jax.random.normal(keys[1], (4,))},
          "block_1": {"mixer": {"M0": jax.random.normal(keys[2], (1, 8, 4))}},
          "embed": {"embedding": jax.random.normal(keys[3], (5, 4))}}


@pytest.mark.parametrize("multiplier", [0.0, 0.3, 7.0])
def test_m0_lr_multiplier_scales_m0_updates_and_nothing_else(multiplier):
  params = _random_tree(0)
  settings = dict(peak_lr=1e-2, warmup_steps=1, total_steps=10, weight_decay=0.1)
  plain = make_optimizer(**settings)
  scaled = make_optimizer(**settings, m0_lr_multiplier=multiplier)
  plain_state, scaled_state = plain.init(params), scaled.init(params)
  for step in range(4):  # several steps: Adam's moments and the schedule move
    grads = _random_tree(step + 1)
    plain_updates, plain_state = plain.update(grads, plain_state, params)
    scaled_updates, scaled_state = scaled.update(grads, scaled_state, params)
    m0 = scaled_updates["block_1"]["mixer"]["M0"]
    chex.assert_trees_all_close(m0, multiplier * plain_updates["block_1"]["mixer"]["M0"],
                                rtol=1e-6, atol=1e-12)
    if step:  # the first step's learning rate is 0 (warmup)
      assert float(jnp.abs(plain_updates["block_1"]["mixer"]["M0"]).max()) > 0
    del scaled_updates["block_1"], plain_updates["block_1"]
    chex.assert_trees_all_equal(scaled_updates, plain_updates)


def test_m0_lr_multiplier_of_one_adds_nothing_to_the_optimizer_state():
  params = _random_tree(0)
  default = optimizer_for(TrainConfig(steps=10))
  assert (jax.tree.structure(default.init(params))
          == jax.tree.structure(make_optimizer(peak_lr=1e-3, warmup_steps=10,
                                               total_steps=10).init(params)))
  scaled = optimizer_for(TrainConfig(steps=10, m0_lr_multiplier=2.0))
  assert jax.tree.structure(scaled.init(params)) != jax.tree.structure(default.init(params))
  assert initial_memory_mask(params) == {"dense": {"kernel": False, "bias": False},
                                         "block_1": {"mixer": {"M0": True}},
                                         "embed": {"embedding": False}}


@pytest.mark.parametrize("multiplier", [-1.0, float("nan")])
def test_m0_lr_multiplier_must_be_non_negative(multiplier):
  with pytest.raises(ValueError, match="TrainConfig.m0_lr_multiplier must be >= 0"):
    TrainConfig(m0_lr_multiplier=multiplier)
  with pytest.raises(ValueError, match="m0_lr_multiplier must be >= 0"):
    make_optimizer(peak_lr=1e-3, warmup_steps=0, total_steps=10, m0_lr_multiplier=multiplier)
