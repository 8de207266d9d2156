"""Inference with the decoder P alone: recurrent memories, fixed-point prefill, generation.

At inference Q is dropped; P feeds back its own memory, m_t = P(x_{<=t}, m_{t-1}) with
m_{-1} = 0, keeping per layer a ring buffer of the last `window` (k_bar, v_bar) plus m_{t-1}.

- `recurrent_memories`: the reference, one token at a time (`lax.scan` of P's decode step).
- `fixed_point_memories`: the fast path for a prompt, a Jacobi iteration of P's parallel
  pass on the memory trajectory, `m^(n+1) = P(x, shift(m^(n)))` from `m^(0) = 0`. Position
  j's memory is exact once positions < j are, so n iterations make positions < n exact and
  T iterations reproduce the recurrence; it usually stops (change <= tol) much earlier.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp

from maglev_jax.model import Maglev, Params, shift_memories
from sdm_jax.models.generate import generate as generate_tokens

PREFILL_IMPLS = ("fixed_point", "recurrent")


def recurrent_memories(model: Maglev, params: Params, tokens: jax.Array) -> jax.Array:
  """P run token by token on its own memories: tokens [B, T] -> m [B, T, d]."""
  chex.assert_rank(tokens, 2)
  batch, length = tokens.shape
  memory0 = jnp.zeros((batch, 1, model.config.d_model), jnp.dtype(model.config.compute_dtype))
  first, caches = model.decoder_prefill(params, tokens[:, :1], memory0, model.config.window)

  def step(carry, inputs):
    memory, caches = carry
    token, position = inputs
    positions = jnp.full((batch, 1), position, jnp.int32)
    memory, caches = model.decoder_step(params, token[:, None], positions, memory, caches)
    return (memory, caches), memory[:, 0]

  _, rest = jax.lax.scan(step, (first, caches),
                         (tokens[:, 1:].T, jnp.arange(1, length, dtype=jnp.int32)))
  return jnp.concatenate([first, jnp.swapaxes(rest, 0, 1)], axis=1)


def fixed_point_memories(model: Maglev, params: Params, tokens: jax.Array, *,
                         tol: float = 1e-4,
                         max_iterations: int | None = None) -> tuple[jax.Array, jax.Array]:
  """P's memory trajectory by fixed-point iteration of its parallel pass.

  Iterates `m <- P(tokens, shift(m))` from m = 0 until `max |m_new - m| <= tol` or
  `max_iterations` (default T, after which the result is the recurrent one up to rounding).

  Returns (m [B, T, d], iterations: int32 scalar, the number of parallel passes run).
  """
  chex.assert_rank(tokens, 2)
  length = tokens.shape[1]
  max_iterations = length if max_iterations is None else max_iterations
  if max_iterations < 1:
    raise ValueError(f"max_iterations must be >= 1 or None, got {max_iterations}")
  if tol < 0:
    raise ValueError(f"tol must be >= 0, got {tol}")
  memories = jnp.zeros((*tokens.shape, model.config.d_model),
                       jnp.dtype(model.config.compute_dtype))

  def keep_going(carry):
    iterations, _, change = carry
    return (iterations < max_iterations) & (change > tol)

  def iterate(carry):
    iterations, memories, _ = carry
    new = model.decoder_hidden(params, tokens, shift_memories(memories))
    change = jnp.max(jnp.abs(new.astype(jnp.float32) - memories.astype(jnp.float32)))
    return iterations + 1, new, change

  iterations, memories, _ = jax.lax.while_loop(
      keep_going, iterate, (jnp.zeros((), jnp.int32), memories, jnp.full((), jnp.inf)))
  return memories, iterations


def prompt_memories(model: Maglev, params: Params, tokens: jax.Array, *,
                    impl: str = "fixed_point", tol: float = 1e-4) -> jax.Array:
  """P's memories over a prompt [B, T] -> [B, T, d], by `impl` in PREFILL_IMPLS."""
  if impl == "fixed_point":
    return fixed_point_memories(model, params, tokens, tol=tol)[0]
  if impl == "recurrent":
    return recurrent_memories(model, params, tokens)
  raise ValueError(f"impl must be one of {PREFILL_IMPLS}, got {impl!r}")


class MaglevDecodeState(NamedTuple):
  """`RecurrentDecoder`'s state: memory m_{t-1} [B, 1, d] (the last token's memory) and
  caches, the decoder layers' `AttentionCache`s of (k_bar, v_bar)."""
  memory: jax.Array
  caches: Any


@dataclasses.dataclass(frozen=True)
class RecurrentDecoder:
  """Maglev's P as a `sdm_jax.models.generate.TokenDecoder`; its state is a `MaglevDecodeState`."""

  model: Maglev
  prefill_impl: str = "fixed_point"
  tol: float = 1e-4

  def __post_init__(self):
    if self.prefill_impl not in PREFILL_IMPLS:
      raise ValueError(f"prefill_impl must be one of {PREFILL_IMPLS}, got {self.prefill_impl!r}")

  @property
  def vocab_size(self) -> int:
    return self.model.vocab_size

  def prefill(self, params: Params, prompt: jax.Array, cache_len: int):
    """prompt [B, T] -> (logits [B, T, V], state); the caches hold min(window, cache_len)."""
    memories = prompt_memories(self.model, params, prompt, impl=self.prefill_impl, tol=self.tol)
    hidden, caches = self.model.decoder_prefill(params, prompt, shift_memories(memories),
                                                cache_len)
    return self.model.logits(params, hidden), MaglevDecodeState(hidden[:, -1:], caches)

  def decode(self, params: Params, tokens: jax.Array, positions: jax.Array,
             state: MaglevDecodeState):
    """tokens, positions [B, 1] -> (logits [B, 1, V], state)."""
    hidden, caches = self.model.decoder_step(params, tokens, positions, state.memory,
                                             state.caches)
    return self.model.logits(params, hidden), MaglevDecodeState(hidden, caches)


def generate(model: Maglev, params: Params, prompt: jax.Array, *, steps: int,
             temperature: float = 1.0, top_k: int | None = None, seed: int = 0,
             prefill_impl: str = "fixed_point", progress=None,
             segment_tokens: int = 256) -> jax.Array:
  """Continues prompt [B, T] by `steps` tokens with P alone; returns the ids [B, steps].
  `progress`, `segment_tokens`: as `sdm_jax.models.generate.generate`."""
  return generate_tokens(RecurrentDecoder(model, prefill_impl), params, prompt, steps=steps,
                         temperature=temperature, top_k=top_k, seed=seed, progress=progress,
                         segment_tokens=segment_tokens)
