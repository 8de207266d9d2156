"""The plateau rule, alone and inside `fit`: a flat loss stops a run before its step cap,
with a checkpoint, and a resumed run that already plateaued trains no further."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from sdm_jax.training import records
from sdm_jax.training.checkpoint import Checkpointer
from sdm_jax.training.config import TrainConfig
from sdm_jax.training.loop import fit
from sdm_jax.training.plateau import LOSS_FLOOR, PLATEAU, PlateauRule


def _history(losses, every=10):
  return [(every * (i + 1), float(loss)) for i, loss in enumerate(losses)]


def test_the_rule_compares_the_means_of_two_windows():
  rule = PlateauRule(window=3, min_improvement=0.05)
  rng = np.random.default_rng(0)
  noisy_flat = 2.0 + 0.01 * rng.standard_normal(6)
  assert rule(_history(noisy_flat)) == PLATEAU
  assert rule(_history(noisy_flat[:5])) is None  # fewer than two windows logged
  falling = 2.0 * 0.9 ** np.arange(6)  # the mean falls by 1 - 0.9^3 = 27% a window
  assert rule(_history(falling)) is None
  # Only the last two windows count: a long fall, then flat.
  assert rule(_history(np.concatenate([falling, np.full(6, falling[-1])]))) == PLATEAU
  # A rising loss has no improvement either.
  assert rule(_history(np.linspace(1.0, 2.0, 6))) == PLATEAU


def test_the_rule_waits_for_min_steps_and_stops_below_the_floor():
  flat = np.full(8, 3.0)
  assert PlateauRule(window=2, min_steps=81)(_history(flat)) is None  # last step 80
  assert PlateauRule(window=2, min_steps=80)(_history(flat)) == PLATEAU
  solved = 1e-3 * 0.5 ** np.arange(4)  # still halving: progress in relative terms
  assert PlateauRule(window=2, loss_floor=0.0)(_history(solved)) is None
  assert PlateauRule(window=2, loss_floor=1e-2)(_history(solved)) == LOSS_FLOOR


def test_a_plateau_above_pause_above_is_a_pause():
  at_chance = 6.24 + 0.001 * np.random.default_rng(1).standard_normal(8)
  assert PlateauRule(window=2)(_history(at_chance)) == PLATEAU
  assert PlateauRule(window=2, pause_above=0.9 * 6.24)(_history(at_chance)) is None
  left_chance = np.full(8, 2.0)  # flat, but well below chance: the end
  assert PlateauRule(window=2, pause_above=0.9 * 6.24)(_history(left_chance)) == PLATEAU


@pytest.mark.parametrize("field, value", [("window", 0), ("window", 2.5),
                                          ("min_improvement", -0.1),
                                          ("min_improvement", float("nan")),
                                          ("min_steps", -1), ("loss_floor", float("inf")),
                                          ("pause_above", -1.0)])
def test_the_rule_refuses_bad_settings(field, value):
  with pytest.raises(ValueError, match=f"PlateauRule.{field} must be"):
    PlateauRule(**{field: value})


def _fit_flat(workdir, rule, steps=40):
  """A loss that does not depend on the parameters: flat from the first step."""
  config = TrainConfig(batch_size=2, seq_len=4, steps=steps, warmup_steps=0, log_every=2,
                       checkpoint_every=steps, eval_batch_size=2)
  return fit(init_params=lambda rng: {"w": jnp.ones(3)},
             loss_fn=lambda params, batch: (0 * jnp.sum(params["w"]) + 1.5, {}),
             evaluate=lambda params: {"evaluated": 1.0},
             draw_batch=lambda step: np.zeros((2, 5), np.int32), config=config,
             workdir=str(workdir), log=lambda line: None, stop_rule=rule)


def test_fit_stops_a_flat_run_at_min_steps_with_a_checkpoint(tmp_path):
  rule = PlateauRule(window=3, min_improvement=0.01, min_steps=14)
  result = _fit_flat(tmp_path, rule)
  # Logs every 2 steps; two windows of 3 logs exist from step 12, min_steps allows 14.
  assert result.summary["step"] == 14 and result.summary["stopped_by_rule"] == PLATEAU
  assert result.summary["stopped_by"] is None and result.summary["evaluated"] == 1.0
  assert result.summary["train_loss"] == pytest.approx(1.5)
  assert Checkpointer(str(tmp_path)).latest_step() == 14
  assert [r["step"] for r in records.read_metrics(str(tmp_path))] == list(range(2, 15, 2))
  # The same call again: the history in metrics.jsonl already satisfies the rule.
  again = _fit_flat(tmp_path, rule)
  assert again.summary["step"] == 14 and again.summary["stopped_by_rule"] == PLATEAU
  assert again.summary["train_loss"] == pytest.approx(1.5)
  assert len(records.read_metrics(str(tmp_path))) == 7


def test_fit_without_a_rule_or_with_one_that_never_fires_reaches_the_cap(tmp_path):
  plain = _fit_flat(tmp_path / "plain", None, steps=10)
  assert plain.summary["step"] == 10 and plain.summary["stopped_by_rule"] is None
  late = _fit_flat(tmp_path / "late", PlateauRule(window=2, min_steps=100), steps=10)
  assert late.summary["step"] == 10 and late.summary["stopped_by_rule"] is None
