"""P alone: the recurrence (reference), the fixed-point prefill (fast path), generation."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from maglev_jax.inference import (RecurrentDecoder, fixed_point_memories, generate,
                                  recurrent_memories)
from maglev_jax.model import shift_memories
from tests.maglev_jax.helpers import random_params, random_tokens, tiny_model

LENGTH = 11  # > window 4: the ring buffers wrap around


@pytest.fixture(scope="module")
def setup():
  model = tiny_model()
  params = random_params(model)
  tokens = random_tokens(model, 2, LENGTH)
  reference = _recurrent(model)(params, tokens)
  return model, params, tokens, reference


@functools.cache
def _recurrent(model):
  """The jitted reference, compiled once per model for the tests that share it."""
  return jax.jit(functools.partial(recurrent_memories, model))


def test_recurrence_equals_parallel_pass_on_its_own_trajectory(setup):
  model, params, tokens, reference = setup

  @jax.jit
  def parallel(params, tokens, reference):
    return (model.decoder_hidden(params, tokens, shift_memories(reference)),
            model.decoder_hidden(params, tokens, jnp.zeros_like(reference)))
  on_trajectory, zeroed = parallel(params, tokens, reference)
  np.testing.assert_allclose(on_trajectory, reference, rtol=1e-5, atol=1e-5)
  # The memory matters: without it P computes something else.
  assert float(jnp.max(jnp.abs(zeroed - reference))) > 1e-2


def test_fixed_point_converges_to_the_recurrent_trajectory(setup):
  model, params, tokens, reference = setup
  run = jax.jit(functools.partial(fixed_point_memories, model),
                static_argnames=("tol", "max_iterations"))
  memories, iterations = run(params, tokens, tol=0.0)
  assert 1 <= int(iterations) <= LENGTH
  np.testing.assert_allclose(memories, reference, rtol=1e-5, atol=1e-5)
  # n iterations make positions < n exact, whatever happens after them.
  partial, iterations = run(params, tokens, tol=0.0, max_iterations=3)
  assert int(iterations) == 3
  np.testing.assert_allclose(partial[:, :3], reference[:, :3], rtol=1e-5, atol=1e-5)
  with pytest.raises(ValueError, match="max_iterations"):
    fixed_point_memories(model, params, tokens, max_iterations=0)


def test_greedy_generation_follows_the_recurrence(setup):
  model, params, tokens, _ = setup
  prompt = tokens[:, :6]
  generated = generate(model, params, prompt, steps=LENGTH - 6, temperature=0)
  assert generated.shape == (2, LENGTH - 6)
  # Greedy: each new token is the argmax after the recurrent memory of the token before it.
  memories = _recurrent(model)(params, jnp.concatenate([prompt, generated], 1))
  expected = jnp.argmax(jax.jit(model.logits)(params, memories[:, 5:-1]), -1)
  np.testing.assert_array_equal(generated, expected)


def test_unknown_prefill_impl_is_named():
  with pytest.raises(ValueError, match="prefill_impl must be one of"):
    RecurrentDecoder(tiny_model(), prefill_impl="parallel")
