"""Training and loading the pattern-string `LM` on a token stream, with `loop.fit`."""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from sdm_jax import sharding
from sdm_jax.data.batches import eval_batches
from sdm_jax.data.tokenizer import BYTE_TOKEN_BYTES
from sdm_jax.metrics import evaluate_validation
from sdm_jax.models.config import LMConfig
from sdm_jax.models.lm import LM, cross_entropy, init_function, logits_and_penalty
from sdm_jax.training.config import TrainConfig
from sdm_jax.training.loop import fit, stream_batches
from sdm_jax.training.workdir import prepare_workdir, read_workdir_config, restore_params


def lm_loss_fn(model: LM) -> Callable[[Any, jax.Array], tuple[jax.Array, dict[str, jax.Array]]]:
  """Mean next-token cross-entropy (plus `logits_and_penalty`'s penalty, 0 unless the model
  weighs its addressing balance): tokens [B, T + 1] -> (loss, metrics)."""
  def loss_fn(params, tokens: jax.Array):
    logits, penalty, metrics = logits_and_penalty(model, params, tokens[:, :-1])
    return jnp.mean(cross_entropy(logits, tokens[:, 1:])) + penalty, metrics
  return loss_fn


def lm_nll_fn(model: LM) -> Callable[[Any, jax.Array, jax.Array], jax.Array]:
  """Jitted per-token nats: (params, inputs [B, T], targets [B, T]) -> [B, T]."""
  return jax.jit(lambda params, inputs, targets: sharding.gathered(
      cross_entropy(model.apply(params, inputs), targets)))


def lm_evaluator(model: LM, val_tokens: np.ndarray, *, batch_size: int, seq_len: int,
                 max_tokens: int | None,
                 token_bytes: np.ndarray | None = BYTE_TOKEN_BYTES,
                 bucket_width: int | None = None) -> Callable[[Any], dict[str, Any]]:
  """params -> `metrics.evaluate_validation` on the first max_tokens validation targets:
  {"val_bpb", "val_tokens", "val_bytes"}, with `token_bytes` [vocab] giving the bytes per
  id (the byte tokenizer's by default); None when they are unknown (no BPB; "val_loss"
  and the reason instead). With `bucket_width`, also "by_position": the same per
  position bucket of the windows."""
  nll = lm_nll_fn(model)

  def evaluate(params) -> dict[str, Any]:
    return evaluate_validation(lambda inputs, targets: nll(params, inputs, targets),
                               eval_batches(val_tokens, batch_size=batch_size,
                                            seq_len=seq_len, max_tokens=max_tokens),
                               token_bytes=token_bytes, bucket_width=bucket_width)
  return evaluate


def train_lm(model_config: LMConfig, train_config: TrainConfig, train_tokens: np.ndarray,
             val_tokens: np.ndarray, workdir: str, *, extra_config: dict[str, Any] | None = None,
             token_bytes: np.ndarray | None = BYTE_TOKEN_BYTES,
             log: Callable[[str], None] = print, stop_after: int | None = None
             ) -> dict[str, Any]:
  """Trains an `LM` on a token stream; returns `fit`'s summary. Writes config.json to the
  workdir (`workdir.prepare_workdir`). `token_bytes`: as `lm_evaluator` takes it."""
  prepare_workdir("lm", model_config, train_config, train_tokens, val_tokens, workdir,
                  extra_config)
  model = LM(model_config)
  return fit(init_params=init_function(model, train_config.seq_len),
             loss_fn=lm_loss_fn(model),
             evaluate=lm_evaluator(model, val_tokens, batch_size=train_config.eval_batch_size,
                                   seq_len=train_config.seq_len,
                                   max_tokens=train_config.eval_tokens,
                                   token_bytes=token_bytes,
                                   bucket_width=train_config.eval_bucket_width),
             draw_batch=stream_batches(train_tokens, train_config), config=train_config,
             workdir=workdir, log=log, stop_after=stop_after).summary


def load_lm(workdir: str, step: int | None = None):
  """Rebuilds the model of a workdir and restores its parameters.

  Returns (model, params, workdir_config, step) for checkpoint `step` (latest by default).
  """
  saved = read_workdir_config(workdir, kind="lm")
  model_config = LMConfig.from_dict(saved["model"])
  train_config = TrainConfig.from_dict(saved["train"])
  model = LM(model_config)
  params, step = restore_params(workdir, init_function(model, train_config.seq_len),
                                train_config, step)
  return model, params, saved, step
