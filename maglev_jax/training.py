"""The lifted parallel training of Maglev: two parallel passes, no token-by-token loop.

  m'_{0:T-1} = Q(x),   m_{0:T-1} = P(x, shift(m')),
  loss = CE(P) + lambda * mean_t ||m_t - m'_t||_2 / sqrt(d) [+ w_Q * CE(Q)].

`train_maglev` runs it with `sdm_jax.training.loop.fit` (resume, NaN guard, checkpoints,
sharded step over the "data" mesh axis); `load_maglev` restores a workdir.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from maglev_jax.config import MaglevConfig
from maglev_jax.evaluation import maglev_evaluator
from maglev_jax.model import Maglev, Params, shift_memories
from sdm_jax.data.tokenizer import BYTE_TOKEN_BYTES
from sdm_jax.models.lm import cross_entropy
from sdm_jax.training.config import TrainConfig
from sdm_jax.training.loop import fit, stream_batches
from sdm_jax.training.workdir import prepare_workdir, read_workdir_config, restore_params

KIND = "maglev"


def memory_distance(memories: jax.Array, targets: jax.Array) -> jax.Array:
  """`||m_t - m'_t||_2 / sqrt(d)` per position: [B, T, d] x 2 -> [B, T] float32."""
  diff = memories.astype(jnp.float32) - targets.astype(jnp.float32)
  squared = jnp.sum(jnp.square(diff), axis=-1)
  # sqrt has an infinite slope at 0, where m and m' agree exactly (position 0 under
  # `shared` at initialisation); take the subgradient 0 there instead of NaN.
  positive = squared > 0
  norm = jnp.where(positive, jnp.sqrt(jnp.where(positive, squared, 1.0)), 0.0)
  return norm / math.sqrt(memories.shape[-1])


def maglev_loss_fn(model: Maglev) -> Callable[[Params, jax.Array],
                                              tuple[jax.Array, dict[str, jax.Array]]]:
  """(params, tokens [B, T + 1]) -> (loss, {"ce", "memory_loss"[, "prefiller_ce"]}): the
  terms before weighting, "prefiller_ce" only when prefiller_ce_weight > 0 (Q's CE is not
  computed otherwise). `fit` logs them to metrics.jsonl."""
  config = model.config

  def loss_fn(params: Params, tokens: jax.Array):
    inputs, next_tokens = tokens[:, :-1], tokens[:, 1:]
    targets = model.target_memories(params, inputs)
    memories = model.decoder_hidden(params, inputs, shift_memories(targets))
    ce = jnp.mean(cross_entropy(model.logits(params, memories), next_tokens))
    pulled = jax.lax.stop_gradient(targets) if config.stop_gradient_target else targets
    memory_loss = jnp.mean(memory_distance(memories, pulled))
    loss = ce + config.memory_loss_weight * memory_loss
    terms = {"ce": ce, "memory_loss": memory_loss}
    if config.prefiller_ce_weight > 0:
      terms["prefiller_ce"] = jnp.mean(cross_entropy(model.logits(params, targets),
                                                     next_tokens))
      loss = loss + config.prefiller_ce_weight * terms["prefiller_ce"]
    return loss, terms

  return loss_fn


def train_maglev(model_config: MaglevConfig, train_config: TrainConfig,
                 train_tokens: np.ndarray, val_tokens: np.ndarray, workdir: str, *,
                 extra_config: dict[str, Any] | None = None,
                 token_bytes: np.ndarray | None = BYTE_TOKEN_BYTES,
                 log: Callable[[str], None] = print) -> dict[str, Any]:
  """Trains Maglev on a token stream; returns `fit`'s summary. config.json gets kind
  "maglev".

  The summary holds the evaluation of `maglev_evaluator` (with `token_bytes`, as it takes
  them, and by position buckets of train_config.eval_bucket_width if set): `val_bpb`
  (= `bpb_recurrent`), `bpb_teacher_forced`, `bpb_recurrent`, `bpb_memory_zeroed`.
  """
  prepare_workdir(KIND, model_config, train_config, train_tokens, val_tokens, workdir,
                  extra_config)
  model = Maglev(model_config)
  # Jitted: Flax initialisation run op by op is slow.
  return fit(init_params=jax.jit(lambda rng: model.init(rng, train_config.seq_len)),
             loss_fn=maglev_loss_fn(model),
             evaluate=maglev_evaluator(model, val_tokens,
                                       batch_size=train_config.eval_batch_size,
                                       seq_len=train_config.seq_len,
                                       max_tokens=train_config.eval_tokens,
                                       token_bytes=token_bytes,
                                       bucket_width=train_config.eval_bucket_width),
             draw_batch=stream_batches(train_tokens, train_config), config=train_config,
             workdir=workdir, log=log).summary


def load_maglev(workdir: str, step: int | None = None):
  """(model, params, workdir_config, step) of a Maglev workdir (latest step by default)."""
  saved = read_workdir_config(workdir, kind=KIND)
  model = Maglev(MaglevConfig.from_dict(saved["model"]))
  train_config = TrainConfig.from_dict(saved["train"])
  params, step = restore_params(workdir, lambda rng: model.init(rng, train_config.seq_len),
                                train_config, step)
  return model, params, saved, step
