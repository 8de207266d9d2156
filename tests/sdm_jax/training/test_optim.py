"""The learning-rate schedule and the weight-decay mask."""

from __future__ import annotations

import jax.numpy as jnp
import pytest

from sdm_jax.training.optim import decay_mask, learning_rate_schedule


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
