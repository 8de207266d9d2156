"""Sampling from an `LM` with per-layer decode caches (constant size for S, G and M layers),
or from any other model that implements the `TokenDecoder` protocol (e.g. Maglev's decoder)."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Protocol

import jax
import jax.numpy as jnp

from sdm_jax.models.lm import LM


class TokenDecoder(Protocol):
  """What `generate` needs from a model; instances must be hashable (a static jit argument).

  prefill(params, prompt [B, T], cache_len) -> (logits [B, T, V], state)
  decode(params, tokens [B, 1], positions [B, 1], state) -> (logits [B, 1, V], state)
  """

  vocab_size: int

  def prefill(self, params: Any, prompt: jax.Array, cache_len: int) -> tuple[jax.Array, Any]:
    ...

  def decode(self, params: Any, tokens: jax.Array, positions: jax.Array,
             state: Any) -> tuple[jax.Array, Any]:
    ...


@dataclasses.dataclass(frozen=True)
class LMDecoder:
  """The `TokenDecoder` of an `LM`: its parallel prefill and its cached decode."""

  model: LM

  @property
  def vocab_size(self) -> int:
    return self.model.config.vocab_size

  def prefill(self, params, prompt: jax.Array, cache_len: int):
    return self.model.apply(params, prompt, cache_len, method=LM.prefill)

  def decode(self, params, tokens: jax.Array, positions: jax.Array, caches):
    return self.model.apply(params, tokens, positions, caches, method=LM.decode)


def sample_token(logits: jax.Array, key: jax.Array, temperature: float,
                 top_k: int | None) -> jax.Array:
  """logits [B, V] -> token ids [B]; temperature 0 is greedy, top_k keeps the k best."""
  if temperature == 0:
    return jnp.argmax(logits, axis=-1).astype(jnp.int32)
  logits = logits / temperature
  if top_k is not None:
    kth_best = jax.lax.top_k(logits, top_k)[0][..., -1:]
    logits = jnp.where(logits < kth_best, -jnp.inf, logits)
  return jax.random.categorical(key, logits, axis=-1).astype(jnp.int32)


@functools.partial(jax.jit, static_argnames=("decoder", "steps", "temperature", "top_k"))
def _generate(decoder: TokenDecoder, params, prompt: jax.Array, key: jax.Array, *, steps: int,
              temperature: float, top_k: int | None) -> jax.Array:
  prompt_len = prompt.shape[1]
  logits, caches = decoder.prefill(params, prompt, prompt_len + steps)
  keys = jax.random.split(key, steps)
  first = sample_token(logits[:, -1], keys[0], temperature, top_k)

  def step(carry, inputs):
    token, caches = carry
    position, step_key = inputs
    positions = jnp.full((token.shape[0], 1), position, jnp.int32)
    logits, caches = decoder.decode(params, token[:, None], positions, caches)
    next_token = sample_token(logits[:, 0], step_key, temperature, top_k)
    return (next_token, caches), token

  positions = prompt_len + jnp.arange(steps, dtype=jnp.int32)
  # Shift the keys by one: keys[0] drew the first token; the last draw is discarded.
  scan_keys = jnp.concatenate([keys[1:], keys[:1]])
  (_, _), tokens = jax.lax.scan(step, (first, caches), (positions, scan_keys))
  return tokens.T


def generate(model: LM | TokenDecoder, params, prompt: jax.Array, *, steps: int,
             temperature: float = 1.0, top_k: int | None = None, seed: int = 0) -> jax.Array:
  """Continues `prompt` [B, T] (T >= 1) by `steps` tokens; returns the new ids [B, steps].

  The prompt is processed by `prefill` (in parallel for an `LM`); each new token costs one
  `decode`.
  """
  decoder = LMDecoder(model) if isinstance(model, LM) else model
  if prompt.ndim != 2 or prompt.shape[1] < 1:
    raise ValueError(f"prompt must be [batch, length >= 1], got shape {prompt.shape}")
  if steps < 1:
    raise ValueError(f"steps must be >= 1, got {steps}")
  if temperature < 0:
    raise ValueError(f"temperature must be >= 0, got {temperature}")
  vocab = decoder.vocab_size
  if top_k is not None and not 1 <= top_k <= vocab:
    raise ValueError(f"top_k must be in [1, {vocab}] or None, got {top_k}")
  if int(jnp.min(prompt)) < 0 or int(jnp.max(prompt)) >= vocab:
    raise ValueError(f"prompt token ids must be in [0, {vocab})")
  return _generate(decoder, params, jnp.asarray(prompt, jnp.int32), jax.random.PRNGKey(seed),
                   steps=steps, temperature=float(temperature), top_k=top_k)
