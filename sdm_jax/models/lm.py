"""The pattern-string language model: embeddings, a stack of blocks, the LM head.

Block: `h = x + mixer(RMSNorm(x)); y = h + MLP(RMSNorm(h))`; on a training mesh its input
and output stay split by sequence (`sdm_jax.sharding.split_batch`). The mixer of each layer is
chosen by its letter in `LMConfig.pattern` (see `sdm_jax.models.mixers`).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp

from sdm_jax import sharding
from sdm_jax.layers.decode_rows import pad_rows
from sdm_jax.layers.mlp import MLP
from sdm_jax.layers.norms import RMSNorm
from sdm_jax.layers.sparse_delta_memory import BALANCE_COLLECTION
from sdm_jax.models.config import LMConfig
from sdm_jax.models.mixers import MIXERS

Caches = list[Any]


class Embedding(nn.Embed):
  """`nn.Embed` whose table is gathered whole before the lookup on a training mesh: looking
  ids up in a table sharded along its features would leave the embeddings split by feature
  instead of by sequence, and XLA would rematerialise them whole to change that."""

  def __call__(self, inputs: jax.Array) -> jax.Array:
    if not jnp.issubdtype(inputs.dtype, jnp.integer):
      raise ValueError(f"token ids must be integers, got {inputs.dtype}")
    table = sharding.gathered(self.embedding)
    return jnp.take(table if self.dtype is None else table.astype(self.dtype), inputs, axis=0)


class Block(nn.Module):
  """Pre-norm residual block around one mixer and one MLP.

  Extra keyword arguments of the methods go to the mixer (e.g. an attention `kv_hook`).
  """

  config: LMConfig
  kind: str

  def setup(self):
    config = self.config
    param_dtype = jnp.dtype(config.param_dtype)
    self.mixer_norm = RMSNorm(param_dtype=param_dtype)
    self.mixer = MIXERS[self.kind].build(config, "mixer")
    self.mlp_norm = RMSNorm(param_dtype=param_dtype)
    self.mlp = MLP(config.mlp_hidden_dim, config.mlp_activation,
                   dtype=jnp.dtype(config.compute_dtype), param_dtype=param_dtype)

  def _finish(self, x: jax.Array, mixed: jax.Array) -> jax.Array:
    h = x + mixed.astype(x.dtype)
    return sharding.split_batch(h + self.mlp(self.mlp_norm(h)).astype(x.dtype))

  def __call__(self, x: jax.Array, positions: jax.Array, **mixer_kwargs) -> jax.Array:
    x = sharding.split_batch(x)
    return self._finish(x, self.mixer(self.mixer_norm(x), positions, **mixer_kwargs))

  def prefill(self, x: jax.Array, positions: jax.Array, cache_len: int, **mixer_kwargs):
    x = sharding.split_batch(x)
    mixed, cache = self.mixer.prefill(self.mixer_norm(x), positions, cache_len, **mixer_kwargs)
    return self._finish(x, mixed), cache

  def decode(self, x: jax.Array, positions: jax.Array, cache: Any, **mixer_kwargs):
    mixed, cache = self.mixer.decode(self.mixer_norm(x), positions, cache, **mixer_kwargs)
    # Batch 1: the MLP on two rows, GEMMs rather than reductions (decode_rows).
    return self._finish(pad_rows(x), pad_rows(mixed))[:x.shape[0]], cache


class LM(nn.Module):
  """Decoder-only LM over token ids, time-major: tokens [B, T] -> logits [B, T, vocab].

  Methods: `__call__` (training), `hidden` (final-norm hidden states), `prefill` (prompt ->
  logits and per-layer caches), `decode` (one token per sequence against the caches).
  """

  config: LMConfig

  def setup(self):
    config = self.config
    param_dtype = jnp.dtype(config.param_dtype)
    self.embed = Embedding(config.vocab_size, config.d_model, param_dtype=param_dtype,
                          embedding_init=nn.initializers.normal(stddev=1.0))
    self.blocks = [Block(config, kind, name=f"block_{i}")
                   for i, kind in enumerate(config.layer_kinds)]
    self.final_norm = RMSNorm(param_dtype=param_dtype)
    self.head = nn.Dense(config.vocab_size, use_bias=False, param_dtype=param_dtype,
                         dtype=jnp.dtype(config.compute_dtype),
                         kernel_init=nn.initializers.normal(stddev=config.d_model ** -0.5))

  def _embed(self, tokens: jax.Array) -> jax.Array:
    chex.assert_rank(tokens, 2)
    return self.embed(tokens).astype(jnp.dtype(self.config.compute_dtype))

  def logits(self, hidden: jax.Array) -> jax.Array:
    """Final-norm hidden states [B, T, d] -> float32 logits [B, T, vocab] (soft-capped)."""
    logits = self.head(hidden).astype(jnp.float32)
    cap = self.config.logit_softcap
    if cap is not None:
      logits = cap * jnp.tanh(logits / cap)
    return logits

  def hidden(self, tokens: jax.Array, positions: jax.Array | None = None) -> jax.Array:
    """tokens [B, T] -> final-norm hidden states [B, T, d]."""
    x = self._embed(tokens)
    positions = default_positions(tokens) if positions is None else positions
    for block in self.blocks:
      x = block(x, positions)
    return self.final_norm(x)

  def __call__(self, tokens: jax.Array, positions: jax.Array | None = None) -> jax.Array:
    return self.logits(self.hidden(tokens, positions))

  def prefill(self, tokens: jax.Array, cache_len: int):
    """Runs a prompt [B, T] at positions 0..T-1 in parallel; returns (logits, caches)."""
    x = self._embed(tokens)
    positions = default_positions(tokens)
    caches = []
    for block in self.blocks:
      x, cache = block.prefill(x, positions, cache_len)
      caches.append(cache)
    return self.logits(self.final_norm(x)), caches

  def decode(self, tokens: jax.Array, positions: jax.Array, caches: Sequence[Any]):
    """One token per sequence: tokens, positions [B, 1] -> (logits [B, 1, vocab], caches)."""
    x = self._embed(tokens)
    new_caches = []
    for block, cache in zip(self.blocks, caches):
      x, cache = block.decode(x, positions, cache)
      new_caches.append(cache)
    # Batch 1: the head on two rows, a GEMM rather than a reduction (decode_rows).
    return self.logits(self.final_norm(pad_rows(x)))[:tokens.shape[0]], new_caches


def init_function(model: LM, seq_len: int) -> Callable[[jax.Array], Any]:
  """The jitted rng -> parameters of `model`, traced on one int32 [1, seq_len] sequence:
  what training (`fit`'s `init_params`) and restoring a checkpoint start from."""
  sample = jnp.zeros((1, seq_len), jnp.int32)
  return jax.jit(lambda rng: model.init(rng, sample))


def default_positions(tokens: jax.Array) -> jax.Array:
  """Positions 0..T-1 of tokens [B, T], as int32 [B, T]."""
  return jnp.broadcast_to(jnp.arange(tokens.shape[1], dtype=jnp.int32), tokens.shape)


def cross_entropy(logits: jax.Array, targets: jax.Array) -> jax.Array:
  """Per-token negative log-likelihood in nats: logits [..., V], targets [...] -> [...]."""
  log_probs = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
  return -jnp.take_along_axis(log_probs, targets[..., None], axis=-1)[..., 0]


def logits_and_penalty(model: LM, variables, inputs: jax.Array
                       ) -> tuple[jax.Array, jax.Array, dict[str, jax.Array]]:
  """(logits, penalty, metrics) of `model.apply(variables, inputs)` for a training loss.

  With `LMConfig.sdm_balance_weight` > 0 the penalty is that weight times the `M` layers'
  addressing balance averaged over layers (`sdm_jax.ops.slot_balance`; 1 when balanced),
  and metrics carry the balance as "addressing_balance"; otherwise 0 and {}.
  """
  weight = model.config.sdm_balance_weight
  if not weight:
    return model.apply(variables, inputs), jnp.zeros((), jnp.float32), {}
  logits, sown = model.apply(variables, inputs, mutable=[BALANCE_COLLECTION])
  balance = jnp.mean(jnp.stack(jax.tree.leaves(sown[BALANCE_COLLECTION])))
  return logits, weight * balance, {"addressing_balance": balance}
