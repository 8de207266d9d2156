"""Slot usage of SDM layers: the written slots against the rows a prefill's final tables
changed (a write always moves a row, nothing else does), and M0's trained rows against
training with M0 frozen or not."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

from sdm_jax.data.recall_tasks import check_task
from sdm_jax.evaluation.slot_usage import (chunk_reuse, read_write_overlap, segment_lengths,
                                           trained_m0_rows, written_slots)
from sdm_jax.layers.sparse_delta_memory import addressing
from sdm_jax.models.config import LMConfig
from sdm_jax.models.lm import LM, init_function
from sdm_jax.training.config import TrainConfig
from sdm_jax.training.recall import held_out_examples, train_recall

MODEL = LMConfig(vocab_size=32, d_model=16, num_layers=2, pattern="SM", num_heads=2,
                 window=4, max_seq_len=12, sdm_heads=2, sdm_slots=64, sdm_writes=3,
                 sdm_reads=2, sdm_chunk_size=4)


def test_written_slots_are_the_rows_the_final_tables_changed():
  model = LM(MODEL)
  params = init_function(model, 12)(jax.random.PRNGKey(1))
  tokens = np.random.default_rng(0).integers(0, 32, size=(5, 12)).astype(np.int32)
  _, caches = jax.jit(lambda p, t: model.apply(p, t, 12, method=LM.prefill))(params, tokens)
  m0 = np.asarray(params["params"]["block_1"]["mixer"]["M0"])  # [H, N, Dv]
  changed = np.any(np.asarray(caches[1].memory) != m0[None], axis=-1)  # [B, H, N]
  slots = MODEL.sdm_heads * MODEL.sdm_slots
  # Batches of 2 sequences: the union and the per-sequence mean span the batches.
  usage = written_slots(model, params, tokens, batch_size=2)
  assert set(usage) == {"layer_1_M"}
  assert usage["layer_1_M"]["written_fraction"] == pytest.approx(
      changed.any(axis=0).sum() / slots)
  assert usage["layer_1_M"]["written_per_sequence_fraction"] == pytest.approx(
      changed.sum(axis=(1, 2)).mean() / slots)
  # 12 tokens x 3 writes cannot cover a head's 64 slots; each token writes 3 distinct ones.
  assert 3 / 64 <= usage["layer_1_M"]["written_per_sequence_fraction"] < 36 / 64
  with pytest.raises(ValueError, match="inputs must be int32 \\[n, T\\]"):
    written_slots(model, params, tokens[0], batch_size=2)


def test_a_model_without_sdm_layers_has_no_usage():
  model = LM(dataclasses.replace(MODEL, pattern="SG", gdn_heads=2))
  params = init_function(model, 12)(jax.random.PRNGKey(0))
  tokens = np.zeros((2, 12), np.int32)
  assert written_slots(model, params, tokens, batch_size=2) == {}
  assert trained_m0_rows(params, params) == {}
  positions = np.zeros((2, 1), np.int32)
  assert read_write_overlap(model, params, tokens, positions, positions, batch_size=2) == {}


def test_reads_meet_the_writes_of_the_same_addressing_exactly():
  """With the query projection set to the key projection and W = R, a position reads
  exactly the W slots it writes; at other pairs of positions the overlap counts the shared
  slots the ids show."""
  config = dataclasses.replace(MODEL, sdm_reads=3)
  model = LM(config)
  params = jax.tree.map(np.array, init_function(model, 12)(jax.random.PRNGKey(2)))
  mixer = params["params"]["block_1"]["mixer"]
  mixer["query_proj"] = jax.tree.map(np.copy, mixer["key_proj"])
  tokens = np.random.default_rng(1).integers(0, 32, size=(3, 12)).astype(np.int32)
  same = np.tile(np.arange(0, 12, 3, dtype=np.int32), (3, 1))
  usage = read_write_overlap(model, params, tokens, same, same, batch_size=2)
  assert usage == {"layer_1_M": {"overlap_slots": 3.0, "chance_slots": 3 * 3 / 64}}
  # Writes at one position, reads at the next: compare with the ids written at both.
  # Jitted: op by op, each call compiles every op of the model for its shapes.
  _, captured = jax.jit(lambda p, t: model.apply(p, t, capture_intermediates=lambda m, method: (
      m.name == "key_proj" and method == "__call__"), mutable=["intermediates"]))(params, tokens)
  scores = captured["intermediates"]["block_1"]["mixer"]["key_proj"]["__call__"][0]
  write_ids, _ = jax.jit(addressing, static_argnums=(1, 2))(
      scores.reshape(3, 12, 2, -1), 3, "xla")  # [B, T, H, W]
  write_ids = np.asarray(write_ids)
  shifted = read_write_overlap(model, params, tokens, same + 1, same, batch_size=3)
  want = np.mean([len(set(write_ids[b, t + 1, h]) & set(write_ids[b, t, h]))
                  for b in range(3) for t in same[0] for h in range(2)])
  assert shifted["layer_1_M"]["overlap_slots"] == pytest.approx(want)
  with pytest.raises(ValueError, match="must lie in"):
    read_write_overlap(model, params, tokens, same + 3, same, batch_size=2)
  with pytest.raises(ValueError, match="both be \\[n, P\\]"):
    read_write_overlap(model, params, tokens, same[:, :2], same, batch_size=2)


def test_trained_rows_are_the_rows_that_moved():
  params = init_function(LM(MODEL), 12)(jax.random.PRNGKey(0))
  moved = jax.tree.map(np.array, params)
  moved["params"]["block_1"]["mixer"]["M0"][1, [3, 40], 5] += 0.25
  assert trained_m0_rows(params, moved) == {"layer_1_M": 2 / (2 * 64)}


@pytest.mark.parametrize("multiplier", [0.0, 1.0])
def test_training_moves_m0_rows_unless_m0_is_frozen(tmp_path, multiplier):
  task = check_task({"name": "mqar", "seq_len": 12, "vocab_size": 32, "num_kv_pairs": 3})
  train = TrainConfig(batch_size=4, seq_len=12, steps=3, warmup_steps=1, log_every=3,
                      checkpoint_every=3, eval_batch_size=4, m0_lr_multiplier=multiplier)
  held_out = held_out_examples(task, 4, train.seed)
  _, model, params = train_recall(MODEL, train, task, str(tmp_path), held_out,
                                  log=lambda line: None)
  initial = init_function(model, 12)(jax.random.PRNGKey(train.seed))
  fraction = trained_m0_rows(initial, jax.device_get(params))["layer_1_M"]
  if multiplier == 0:
    assert fraction == 0.0
  else:  # 3 steps of 4 x 12 tokens x 5 addressed slots cannot touch all 128 rows
    assert 0 < fraction < 1


def test_segment_lengths_count_slots_shared_within_a_chunk():
  # One sequence, one head, chunks of 2 tokens of 2 slots: chunk 0 writes {1, 2} and {2, 3}
  # (slot 2 twice), chunk 1 {4, 5} twice; the fifth token is cut (no whole chunk).
  ids = np.array([[1, 2], [2, 3], [4, 5], [4, 5], [6, 7]])[None, :, None, :]
  stats = segment_lengths(ids, 2)
  assert stats["unique_fraction"] == pytest.approx((3 + 2) / 8)
  # entries' segment lengths: 1, 2, 2, 1 and 2, 2, 2, 2
  assert stats["mean_segment"] == pytest.approx(14 / 8)
  assert stats["max_segment"] == pytest.approx(2.0)
  with pytest.raises(ValueError, match="chunk_size"):
    segment_lengths(ids, 6)


def test_chunk_reuse_measures_the_writes_and_reads_of_every_sdm_layer():
  model = LM(MODEL)
  params = init_function(model, 12)(jax.random.PRNGKey(1))
  tokens = np.random.default_rng(0).integers(0, 32, size=(3, 12)).astype(np.int32)
  reuse = chunk_reuse(model, params, tokens, chunk_size=4, batch_size=2)
  assert set(reuse) == {"layer_1_M"} and set(reuse["layer_1_M"]) == {"writes", "reads"}
  block = model.apply(params, tokens, capture_intermediates=True,
                      mutable=["intermediates"])[1]["intermediates"]["block_1"]
  for kind, projection, count in (("writes", "key_proj", 3), ("reads", "query_proj", 2)):
    scores = block["mixer"][projection]["__call__"][0]
    ids, _ = addressing(scores.reshape(3, 12, MODEL.sdm_heads, -1), count, "xla")
    assert reuse["layer_1_M"][kind] == pytest.approx(segment_lengths(np.asarray(ids), 4))
    assert reuse["layer_1_M"][kind]["mean_segment"] >= 1
  with pytest.raises(ValueError, match="inputs must be int32 \\[n, T\\]"):
    chunk_reuse(model, params, tokens[0], chunk_size=4, batch_size=2)
