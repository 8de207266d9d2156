"""`sdm_jax.training.recall`: seeds, batches, the masked loss and accuracy by variant."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sdm_jax.data.recall_tasks import IGNORE_LABEL
from sdm_jax.models.config import LMConfig
from sdm_jax.models.lm import LM, cross_entropy
from sdm_jax.training import recall

TASK = {"name": "mqar", "seq_len": 32, "vocab_size": 32, "num_kv_pairs": 4}


def tiny_model():
  model = LM(LMConfig(vocab_size=32, d_model=16, num_layers=1, pattern="A", num_heads=2,
                      max_seq_len=64))
  # Jitted: eager init and apply dispatch op by op (seconds for this model).
  return model, jax.jit(model.init)(jax.random.PRNGKey(0), jnp.zeros((1, 32), jnp.int32))


def test_batches_are_pure_functions_of_the_step_and_apart_from_held_out_examples():
  first = recall.recall_batch(TASK, step=3, batch_size=4, seed=0)
  assert first.shape == (4, 2, 32) and first.dtype == np.int32
  np.testing.assert_array_equal(first, recall.recall_batch(TASK, step=3, batch_size=4, seed=0))
  assert not np.array_equal(first, recall.recall_batch(TASK, step=4, batch_size=4, seed=0))
  held_out = recall.held_out_examples(TASK, 4, seed=0)
  assert not np.array_equal(first[:, 0], held_out["inputs"])


def test_loss_averages_cross_entropy_over_labelled_positions_only():
  model, params = tiny_model()
  batch = recall.recall_batch(TASK, step=0, batch_size=3, seed=0)
  loss, _ = jax.jit(recall.recall_loss_fn(model))(params, jnp.asarray(batch))
  inputs, targets = batch[:, 0], batch[:, 1]
  mask = targets != IGNORE_LABEL
  nll = np.asarray(cross_entropy(jax.jit(model.apply)(params, jnp.asarray(inputs)),
                                 jnp.asarray(np.where(mask, targets, 0))))
  np.testing.assert_allclose(float(loss), nll[mask].mean(), rtol=1e-5)


def test_the_loss_adds_the_weighted_addressing_balance_and_reports_it():
  model = LM(LMConfig(vocab_size=32, d_model=16, num_layers=1, pattern="M", num_heads=2,
                      max_seq_len=64, sdm_slots=64, sdm_writes=4, sdm_reads=4,
                      sdm_balance_weight=0.5))
  params = jax.jit(model.init)(jax.random.PRNGKey(0), jnp.zeros((1, 32), jnp.int32))
  batch = jnp.asarray(recall.recall_batch(TASK, step=0, batch_size=3, seed=0))
  loss, metrics = jax.jit(recall.recall_loss_fn(model))(params, batch)
  plain = LM(dataclasses.replace(model.config, sdm_balance_weight=0.0))
  plain_loss, plain_metrics = jax.jit(recall.recall_loss_fn(plain))(params, batch)
  assert plain_metrics == {}
  np.testing.assert_allclose(float(loss), float(plain_loss)
                             + 0.5 * float(metrics["addressing_balance"]), rtol=1e-5)


def test_accuracy_counts_argmax_hits_at_labelled_positions():
  model, params = tiny_model()
  examples = recall.held_out_examples(TASK, 5, seed=1)
  predicted = np.asarray(jnp.argmax(jax.jit(model.apply)(params, jnp.asarray(examples["inputs"])),
                                    -1))
  mask = examples["targets"] != IGNORE_LABEL
  result = recall.recall_accuracy(model, params, examples["inputs"], examples["targets"],
                                  batch_size=2)
  assert result["n"] == 5 and result["positions"] == int(mask.sum()) == 5 * 4
  assert result["accuracy"] == pytest.approx(
      float(np.mean(predicted[mask] == examples["targets"][mask])))

  by_length = recall.accuracy_by_variant(model, params, TASK, [{"seq_len": 16},
                                                                {"seq_len": 64}],
                                         num_examples=3, seed=0, batch_size=3)
  assert [(r["seq_len"], r["n"], r["positions"]) for r in by_length] == [(16, 3, 12),
                                                                          (64, 3, 12)]
  with pytest.raises(ValueError, match="num_kv_pairs"):
    recall.accuracy_by_variant(model, params, TASK, [{"num_kv_pairs": 9}], num_examples=1,
                               seed=0, batch_size=1)


def test_evaluation_variants_and_their_checks():
  assert recall.evaluation_variants() == {}
  variants = recall.evaluation_variants(seq_lens=["16", 64], num_kv_pairs=[2])
  assert variants == {"by_seq_len": [{"seq_len": 16}, {"seq_len": 64}],
                      "by_num_kv_pairs": [{"num_kv_pairs": 2}]}
  recall.check_variants(TASK, variants)
  with pytest.raises(ValueError, match="num_kv_pairs"):
    recall.check_variants(TASK, recall.evaluation_variants(num_kv_pairs=[2, 9]))


def test_examples_that_do_not_fit_the_model_are_refused():
  rng = np.random.default_rng(0)
  inputs = rng.integers(0, 16, (3, 8))
  inputs[0, :2] = 0, 15  # the whole vocabulary's range
  targets = np.where(rng.random((3, 8)) < 0.5, IGNORE_LABEL, rng.integers(0, 16, (3, 8)))
  checked = recall.check_examples(inputs, targets, 16, 8, "held_out.npz")
  assert all(array.dtype == np.int32 for array in checked)
  np.testing.assert_array_equal(checked[1], targets)
  for bad, message in [
      ((inputs.astype(np.float32), targets), "inputs must be an integer array"),
      ((inputs, targets[:, :4]), "must have the same non-empty shape"),
      ((np.tile(inputs, 2), np.tile(targets, 2)), "sequence length 16 exceeds"),
      ((inputs + 1, targets), "inputs hold token ids in \\[1, 16\\]"),
      ((inputs, np.where(targets == IGNORE_LABEL, -1, targets)), "targets hold token ids"),
  ]:
    with pytest.raises(ValueError, match=f"^held_out.npz: .*{message}"):
      recall.check_examples(*bad, 16, 8, "held_out.npz")
