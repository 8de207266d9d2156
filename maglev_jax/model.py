"""Maglev's two networks and the functions that run them.

- `Prefiller` (Q): attention blocks of Q's pattern over the token embeddings; its
  final-norm hidden states are the target memories m'.
- `Decoder` (P): an all-`S` `LM` whose every attention layer takes the memory m_{j-1} into
  the keys and values of position j (`MemoryInjection`); its final-norm hidden state m_j
  is both the next memory and the input of the LM head.
- `Maglev`: a hashable description (the config) with pure functions over a parameter tree
  {"decoder": ..., "prefiller": ...}. With `sharing="shared"` the prefiller's subtree holds
  only its residual scalings and final norm; its blocks are read from the decoder's.

Both stacks scale their residual stream before every block,
`x <- residual_scale[l] * x + embedding_scale[l] * x0` (x0 the token embeddings; scales
start at 1 and 0), which lets shared blocks serve two networks differently.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp

from maglev_jax.config import MaglevConfig
from maglev_jax.injection import MemoryInjection
from sdm_jax.layers.norms import RMSNorm
from sdm_jax.models.lm import LM, Block, default_positions

Params = dict[str, Any]


def shift_memories(memories: jax.Array) -> jax.Array:
  """[B, T, d] -> [B, T, d] whose position j holds memories[:, j - 1] (zeros at j = 0)."""
  chex.assert_rank(memories, 3)
  return jnp.pad(memories[:, :-1], ((0, 0), (1, 0), (0, 0)))


class ResidualScales(nn.Module):
  """Per-layer scalars of one stack: `x <- residual[l] * x + embedding[l] * x0`."""

  num_layers: int
  param_dtype: Any = jnp.float32

  def setup(self):
    self.residual = self.param("residual_scale", nn.initializers.ones, (self.num_layers,),
                               self.param_dtype)
    self.embedding = self.param("embedding_scale", nn.initializers.zeros, (self.num_layers,),
                                self.param_dtype)

  def __call__(self, layer: int, x: jax.Array, x0: jax.Array) -> jax.Array:
    return (self.residual[layer].astype(x.dtype) * x
            + self.embedding[layer].astype(x.dtype) * x0)


def _run_stack(blocks, scales: ResidualScales, x0: jax.Array,
               run_block: Callable[[int, nn.Module, jax.Array], tuple[jax.Array, Any]]):
  """Applies `run_block(layer, block, x) -> (x, extra)` over the stack; returns (x, extras)."""
  x, extras = x0, []
  for layer, block in enumerate(blocks):
    x, extra = run_block(layer, block, scales(layer, x, x0))
    extras.append(extra)
  return x, extras


class Prefiller(nn.Module):
  """Q: token embeddings x0 [B, T, d] at positions [B, T] -> target memories m' [B, T, d]."""

  config: MaglevConfig

  def setup(self):
    config = self.config.prefiller_config()
    param_dtype = jnp.dtype(config.param_dtype)
    self.blocks = [Block(config, kind, name=f"block_{i}")
                   for i, kind in enumerate(config.layer_kinds)]
    self.scales = ResidualScales(config.num_layers, param_dtype)
    self.final_norm = RMSNorm(param_dtype=param_dtype)

  def __call__(self, x0: jax.Array, positions: jax.Array) -> jax.Array:
    x, _ = _run_stack(self.blocks, self.scales, x0,
                      lambda layer, block, x: (block(x, positions), None))
    return self.final_norm(x)


class Decoder(nn.Module):
  """P: an all-`S` LM (`self.lm`: embedding, blocks, final norm, head) with per-layer memory
  injection. `memory_prev` [B, T, d] holds m_{j-1} at position j."""

  config: MaglevConfig

  def setup(self):
    config = self.config
    self.lm = LM(config.decoder_config())
    self.injections = [
        MemoryInjection(config.num_heads, config.resolved_head_dim, config.rope_base,
                        dtype=jnp.dtype(config.compute_dtype),
                        param_dtype=jnp.dtype(config.param_dtype), name=f"injection_{i}")
        for i in range(config.num_layers)]
    self.scales = ResidualScales(config.num_layers, jnp.dtype(config.param_dtype))

  def embed(self, tokens: jax.Array) -> jax.Array:
    """tokens [B, T] -> embeddings x0 [B, T, d] in the compute dtype."""
    chex.assert_rank(tokens, 2)
    return self.lm.embed(tokens).astype(jnp.dtype(self.config.compute_dtype))

  def logits(self, hidden: jax.Array) -> jax.Array:
    return self.lm.logits(hidden)

  def _hook(self, layer: int, memory_prev: jax.Array):
    return functools.partial(self.injections[layer],
                             memory_prev=memory_prev.astype(jnp.dtype(self.config.compute_dtype)))

  def hidden(self, tokens: jax.Array, memory_prev: jax.Array,
             positions: jax.Array | None = None) -> jax.Array:
    """The parallel pass: tokens [B, T], memory_prev [B, T, d] -> memories m [B, T, d]."""
    positions = default_positions(tokens) if positions is None else positions
    x, _ = _run_stack(
        self.lm.blocks, self.scales, self.embed(tokens),
        lambda layer, block, x: (block(x, positions, kv_hook=self._hook(layer, memory_prev)),
                                 None))
    return self.lm.final_norm(x)

  def __call__(self, tokens: jax.Array, memory_prev: jax.Array) -> jax.Array:
    return self.logits(self.hidden(tokens, memory_prev))

  def prefill(self, tokens: jax.Array, memory_prev: jax.Array, cache_len: int):
    """The parallel pass at positions 0..T-1 that also fills the ring buffers of (k_bar,
    v_bar); returns (m [B, T, d], caches)."""
    positions = default_positions(tokens)
    x, caches = _run_stack(
        self.lm.blocks, self.scales, self.embed(tokens),
        lambda layer, block, x: block.prefill(x, positions, cache_len,
                                              kv_hook=self._hook(layer, memory_prev)))
    return self.lm.final_norm(x), caches

  def decode(self, tokens: jax.Array, positions: jax.Array, memory_prev: jax.Array, caches):
    """One token per sequence: tokens, positions [B, 1], memory_prev [B, 1, d] (m_{t-1})
    -> (m_t [B, 1, d], caches)."""
    x, caches = _run_stack(
        self.lm.blocks, self.scales, self.embed(tokens),
        lambda layer, block, x: block.decode(x, positions, caches[layer],
                                             kv_hook=self._hook(layer, memory_prev)))
    return self.lm.final_norm(x), caches


@dataclasses.dataclass(frozen=True)
class Maglev:
  """A Maglev model: pure functions of (params, inputs). Hashable: a static jit argument."""

  config: MaglevConfig

  @property
  def decoder(self) -> Decoder:
    return Decoder(self.config)

  @property
  def prefiller(self) -> Prefiller:
    return Prefiller(self.config)

  @property
  def vocab_size(self) -> int:
    return self.config.vocab_size

  def init(self, rng: jax.Array, seq_len: int = 8) -> Params:
    """{"decoder": P's parameters, "prefiller": Q's own parameters}."""
    decoder_rng, prefiller_rng = jax.random.split(rng)
    tokens = jnp.zeros((1, seq_len), jnp.int32)
    memory = jnp.zeros((1, seq_len, self.config.d_model), jnp.dtype(self.config.compute_dtype))
    decoder = self.decoder.init(decoder_rng, tokens, memory)["params"]
    prefiller = dict(self.prefiller.init(prefiller_rng, memory, default_positions(tokens))
                     ["params"])
    if self.config.sharing == "shared":
      prefiller = {k: v for k, v in prefiller.items() if not k.startswith("block_")}
    return {"decoder": decoder, "prefiller": prefiller}

  def prefiller_params(self, params: Params) -> Params:
    """Q's full parameter tree; under `shared` its blocks are the decoder's."""
    prefiller = dict(params["prefiller"])
    if self.config.sharing == "shared":
      lm = params["decoder"]["lm"]
      prefiller.update({name: lm[name] for name in lm if name.startswith("block_")})
    return prefiller

  def embed(self, params: Params, tokens: jax.Array) -> jax.Array:
    return self.decoder.apply({"params": params["decoder"]}, tokens, method=Decoder.embed)

  def target_memories(self, params: Params, tokens: jax.Array) -> jax.Array:
    """Q: tokens [B, T] -> m' [B, T, d] (m'_t summarises tokens 0..t)."""
    return self.prefiller.apply({"params": self.prefiller_params(params)},
                                self.embed(params, tokens), default_positions(tokens))

  def decoder_hidden(self, params: Params, tokens: jax.Array,
                     memory_prev: jax.Array) -> jax.Array:
    """P in parallel: tokens [B, T], memory_prev [B, T, d] -> m [B, T, d]."""
    return self.decoder.apply({"params": params["decoder"]}, tokens, memory_prev,
                              method=Decoder.hidden)

  def logits(self, params: Params, hidden: jax.Array) -> jax.Array:
    """Memories [B, T, d] -> float32 logits [B, T, vocab] through P's LM head."""
    return self.decoder.apply({"params": params["decoder"]}, hidden, method=Decoder.logits)

  def decoder_prefill(self, params: Params, tokens: jax.Array, memory_prev: jax.Array,
                      cache_len: int):
    """P in parallel at positions 0..T-1, also returning its decode caches: (m, caches)."""
    return self.decoder.apply({"params": params["decoder"]}, tokens, memory_prev, cache_len,
                              method=Decoder.prefill)

  def decoder_step(self, params: Params, tokens: jax.Array, positions: jax.Array,
                   memory_prev: jax.Array, caches):
    """P for one token per sequence against its caches: (m_t [B, 1, d], caches)."""
    return self.decoder.apply({"params": params["decoder"]}, tokens, positions, memory_prev,
                              caches, method=Decoder.decode)
