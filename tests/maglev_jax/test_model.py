"""Maglev's networks: P without memory is its SWA LM; Q under `shared` runs P's blocks."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from maglev_jax.model import shift_memories
from sdm_jax.models.lm import LM
from tests.maglev_jax.helpers import random_params, random_tokens, tiny_model


def test_shift_memories_moves_each_memory_one_position_later():
  memories = jax.random.normal(jax.random.PRNGKey(0), (2, 5, 3))
  shifted = shift_memories(memories)
  np.testing.assert_array_equal(shifted[:, 0], 0.0)
  np.testing.assert_array_equal(shifted[:, 1:], memories[:, :-1])


def test_fresh_decoder_without_memory_is_its_swa_lm():
  # At initialisation both gates are 1, the residual scales (1, 0) and k_rec = v_rec = 0
  # for a zero memory, so P computes exactly the all-S LM held in params["decoder"]["lm"].
  model = tiny_model()
  params = random_params(model, fresh_gates=True)
  tokens = random_tokens(model, 2, 9)
  lm = LM(model.config.decoder_config())

  @jax.jit
  def both(params, tokens):
    zeros = jnp.zeros((*tokens.shape, model.config.d_model))
    return (model.logits(params, model.decoder_hidden(params, tokens, zeros)),
            lm.apply({"params": params["decoder"]["lm"]}, tokens))
  logits, lm_logits = both(params, tokens)
  np.testing.assert_allclose(logits, lm_logits, rtol=1e-5, atol=1e-5)


def test_shared_prefiller_reads_the_decoder_blocks():
  separate, shared = tiny_model(), tiny_model(sharing="shared")
  params = random_params(shared)
  assert not any(name.startswith("block_") for name in params["prefiller"])
  full = shared.prefiller_params(params)
  assert full["block_1"] is params["decoder"]["lm"]["block_1"]
  separate_params = jax.eval_shape(separate.init, jax.random.PRNGKey(0))
  assert set(full) == set(separate_params["prefiller"])
  size = lambda tree: sum(x.size for x in jax.tree.leaves(tree))  # noqa: E731
  assert size(params) < size(separate_params)
  memories = jax.jit(shared.target_memories)(params, random_tokens(shared, 2, 6))
  assert memories.shape == (2, 6, 32) and bool(jnp.all(jnp.isfinite(memories)))
