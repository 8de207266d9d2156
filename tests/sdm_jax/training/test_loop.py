"""The generic loop: checkpoint round trip, the NaN guard, the returned state."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sdm_jax.training.checkpoint import Checkpointer
from sdm_jax.training.config import TrainConfig
from sdm_jax.training.loop import NonFiniteLossError, fit, stream_batches


def train_config(**overrides):
  values = dict(batch_size=4, seq_len=32, steps=6, peak_lr=1e-2, warmup_steps=2, log_every=1,
                checkpoint_every=3, eval_batch_size=4, eval_tokens=128)
  return TrainConfig(**{**values, **overrides})


def quiet(_):
  pass


def test_checkpoint_round_trip(tmp_path):
  state = {"w": jax.random.normal(jax.random.PRNGKey(0), (3, 4)), "step": jnp.array(7)}
  checkpointer = Checkpointer(str(tmp_path), max_to_keep=2)
  for step in (1, 2, 3):
    checkpointer.save(step, jax.tree.map(lambda x, s=step: x + s, state))
  assert checkpointer.all_steps() == [2, 3]
  restored = checkpointer.restore(state)
  np.testing.assert_array_equal(restored["w"], state["w"] + 3)
  np.testing.assert_array_equal(restored["step"], 10)
  np.testing.assert_array_equal(checkpointer.restore(state, step=2)["w"], state["w"] + 2)
  checkpointer.close()


def test_nan_guard_stops_and_keeps_the_last_good_checkpoint(tmp_path):
  def loss_fn(params, batch):
    loss = jnp.sum(params["w"] ** 2)
    return jnp.where(batch[0, 0] < 0, jnp.nan, loss), {}  # negative tokens poison the loss

  def run(stream, **overrides):
    config = train_config(checkpoint_every=2, log_every=2, warmup_steps=0, **overrides)
    return fit(init_params=lambda rng: {"w": jnp.ones(3)}, loss_fn=loss_fn,
               evaluate=lambda params: {}, draw_batch=stream_batches(stream, config),
               config=config,
               workdir=str(tmp_path), log=quiet)

  clean = np.arange(200, dtype=np.int32)
  run(clean, steps=4)  # checkpoints at steps 2 and 4
  with pytest.raises(NonFiniteLossError, match=r"step 5.*last good checkpoint \(step 4\)"):
    run(-clean - 1, steps=8)  # resumes at 4; step 5 is NaN, caught at the step-6 check
  assert Checkpointer(str(tmp_path)).latest_step() == 4


def test_fit_returns_the_trained_state_and_its_summary(tmp_path):
  def loss_fn(params, batch):
    return jnp.sum((params["w"] - 3.0) ** 2) + 0 * jnp.sum(batch), {}

  config = train_config(steps=5, warmup_steps=0, checkpoint_every=5)
  result = fit(init_params=lambda rng: {"w": jnp.zeros(3)}, loss_fn=loss_fn,
               evaluate=lambda params: {"w0": float(params["w"][0])},
               draw_batch=stream_batches(np.arange(200, dtype=np.int32), config),
               config=config, workdir=str(tmp_path), log=quiet)
  assert int(result.state.step) == 5 and result.summary["step"] == 5
  # The summary's evaluation is of the returned parameters, which the steps moved.
  assert result.summary["w0"] == float(result.state.params["w"][0]) > 0
  restored = Checkpointer(str(tmp_path)).restore(result.state)
  np.testing.assert_array_equal(restored.params["w"], result.state.params["w"])


def test_metrics_jsonl_holds_the_loss_terms_of_every_logged_step(tmp_path):
  def loss_fn(params, batch):
    fit_term = jnp.sum((params["w"] - 3.0) ** 2) + 0 * jnp.sum(batch)
    decay = jnp.sum(params["w"] ** 2)
    return fit_term + 0.5 * decay, {"fit_term": fit_term, "decay": decay}

  config = train_config(steps=4, warmup_steps=0, log_every=2, checkpoint_every=4)
  logged = []
  fit(init_params=lambda rng: {"w": jnp.asarray([0.5, -1.0, 2.0])}, loss_fn=loss_fn,
      evaluate=lambda params: {}, draw_batch=stream_batches(np.arange(200, dtype=np.int32),
                                                            config),
      config=config, workdir=str(tmp_path), log=logged.append)
  lines = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
  assert [line["step"] for line in lines] == [2, 4]
  for line in lines:
    assert line["loss"] == pytest.approx(line["fit_term"] + 0.5 * line["decay"], rel=1e-6)
    assert "finite" not in line and line["grad_norm"] > 0
  assert lines[1]["fit_term"] < lines[0]["fit_term"]
  assert "| fit_term " in logged[0] and "| decay " in logged[0]
