"""Maglev's three BPBs: teacher-forced, recurrent (the honest one) and memory-zeroed.

The evaluator itself runs end to end in tests/experiments/test_maglev_cli.py (train and
evaluate a workdir); here, the memory sources it is built from.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from maglev_jax.evaluation import maglev_nll_fn, memories_for
from maglev_jax.inference import recurrent_memories
from maglev_jax.model import shift_memories
from tests.maglev_jax.helpers import random_params, random_tokens, tiny_model


def test_memory_sources_feed_p_with_q_its_own_or_no_memory():
  model = tiny_model(num_layers=1, prefiller_pattern="A")
  params = random_params(model)
  tokens = random_tokens(model, 2, 7)

  @jax.jit
  def sources(params, tokens):
    got = {s: memories_for(model, params, tokens, s)
           for s in ("teacher_forced", "recurrent", "memory_zeroed")}
    targets = model.target_memories(params, tokens)
    want = {"teacher_forced": model.decoder_hidden(params, tokens, shift_memories(targets)),
            "recurrent": recurrent_memories(model, params, tokens),
            "memory_zeroed": model.decoder_hidden(params, tokens, jnp.zeros_like(targets))}
    return got, want
  got, want = sources(params, tokens)
  for source in want:
    np.testing.assert_allclose(got[source], want[source], rtol=1e-6, atol=1e-6)
  # Random parameters: the three sources give three different models.
  assert float(jnp.max(jnp.abs(got["recurrent"] - got["teacher_forced"]))) > 1e-3
  assert float(jnp.max(jnp.abs(got["recurrent"] - got["memory_zeroed"]))) > 1e-3


def test_unknown_memory_source_is_named():
  with pytest.raises(ValueError, match="source must be one of"):
    maglev_nll_fn(tiny_model(), "oracle")
