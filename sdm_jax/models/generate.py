"""Sampling from an `LM` with per-layer decode caches (constant size for S, G and M layers),
or from any other model that implements the `TokenDecoder` protocol (e.g. Maglev's decoder)."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Protocol

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


def dense_kernels_in(params, dtype):
  """`params` with every `nn.Dense` kernel (leaves named "kernel") wider than `dtype` stored
  in `dtype`, every other leaf as it is.

  A Dense layer casts its kernel to its compute dtype on every call, so with `dtype` the
  models' compute dtype the outputs are unchanged, bit for bit, while a decode step reads
  half the weight bytes (float32 -> bf16) and runs no casts: at one token per step the
  weights are most of what a step reads. Biases, norms, gates, M0 keep their dtype.
  """
  dtype = jnp.dtype(dtype)

  def cast(path, leaf):
    name = getattr(path[-1], "key", None) if path else None
    if (name == "kernel" and jnp.issubdtype(leaf.dtype, jnp.floating)
        and leaf.dtype.itemsize > dtype.itemsize):
      return leaf.astype(dtype)
    return leaf

  return jax.tree_util.tree_map_with_path(cast, params)


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


@functools.partial(jax.jit, static_argnames=("decoder", "cache_len", "temperature", "top_k"))
def _prefill(decoder: TokenDecoder, params, prompt: jax.Array, key: jax.Array, *,
             cache_len: int, temperature: float, top_k: int | None):
  """The prompt through `prefill`; returns (first new token [B], caches)."""
  logits, caches = decoder.prefill(params, prompt, cache_len)
  return sample_token(logits[:, -1], key, temperature, top_k), caches


@functools.partial(jax.jit, static_argnames=("decoder", "temperature", "top_k"),
                   donate_argnames=("caches",))
def decode_tokens(decoder: TokenDecoder, params, token: jax.Array, caches, positions: jax.Array,
                  keys: jax.Array, *, temperature: float, top_k: int | None):
  """len(positions) decode steps in one `lax.scan`, the caches donated (updated in place).

  token [B]: the token at positions[0]; positions [S] int32; keys [S] (one per step, the
  draw of the token after it). Returns (tokens [B, S]: token and the S - 1 after it, the
  token after the last position [B], caches).
  """
  def step(carry, inputs):
    token, caches = carry
    position, step_key = inputs
    positions = jnp.full((token.shape[0], 1), position, jnp.int32)
    logits, caches = decoder.decode(params, token[:, None], positions, caches)
    next_token = sample_token(logits[:, 0], step_key, temperature, top_k)
    return (next_token, caches), token

  (next_token, caches), tokens = jax.lax.scan(step, (token, caches), (positions, keys))
  return tokens.T, next_token, caches


def generate(model: LM | TokenDecoder, params, prompt: jax.Array, *, steps: int,
             temperature: float = 1.0, top_k: int | None = None, seed: int = 0,
             progress: Callable[[int, int], None] | None = None,
             segment_tokens: int = 256) -> jax.Array:
  """Continues `prompt` [B, T] (T >= 1) by `steps` tokens; returns the new ids [B, steps].

  The prompt is processed by `prefill` (in parallel for an `LM`); each new token costs one
  `decode`, inside a `lax.scan`. An `LM`'s Dense kernels are cast to its compute dtype
  once, before both (`dense_kernels_in`: the same tokens, fewer bytes per step). With
  `progress`, the scan runs in segments of `segment_tokens` and `progress(tokens_done,
  steps)` is called after each (same tokens: the sampling keys do not depend on the
  segmenting).
  """
  decoder = LMDecoder(model) if isinstance(model, LM) else model
  if isinstance(model, LM):
    params = jax.jit(dense_kernels_in, static_argnums=1)(params, model.config.compute_dtype)
  if prompt.ndim != 2 or prompt.shape[1] < 1:
    raise ValueError(f"prompt must be [batch, length >= 1], got shape {prompt.shape}")
  if steps < 1:
    raise ValueError(f"steps must be >= 1, got {steps}")
  if temperature < 0:
    raise ValueError(f"temperature must be >= 0, got {temperature}")
  if segment_tokens < 1:
    raise ValueError(f"segment_tokens must be >= 1, got {segment_tokens}")
  vocab = decoder.vocab_size
  if top_k is not None and not 1 <= top_k <= vocab:
    raise ValueError(f"top_k must be in [1, {vocab}] or None, got {top_k}")
  if int(jnp.min(prompt)) < 0 or int(jnp.max(prompt)) >= vocab:
    raise ValueError(f"prompt token ids must be in [0, {vocab})")
  sampling = dict(temperature=float(temperature), top_k=top_k)
  prompt = jnp.asarray(prompt, jnp.int32)
  prompt_len = prompt.shape[1]
  keys = jax.random.split(jax.random.PRNGKey(seed), steps)
  token, caches = _prefill(decoder, params, prompt, keys[0], cache_len=prompt_len + steps,
                           **sampling)
  # keys[0] drew the first token; step i draws the token after it with keys[i + 1] (the
  # last step's draw is discarded, so it reuses keys[0]).
  step_keys = jnp.concatenate([keys[1:], keys[:1]])
  positions = prompt_len + jnp.arange(steps, dtype=jnp.int32)
  segment = steps if progress is None else segment_tokens
  pieces = []
  for start in range(0, steps, segment):
    stop = min(start + segment, steps)
    tokens, token, caches = decode_tokens(decoder, params, token, caches,
                                          positions[start:stop], step_keys[start:stop],
                                          **sampling)
    pieces.append(tokens)
    if progress is not None:
      jax.block_until_ready(tokens)
      progress(stop, steps)
  return jnp.concatenate(pieces, axis=1)
