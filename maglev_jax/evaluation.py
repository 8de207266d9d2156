"""Honest evaluation of Maglev: bits per byte of P under three memory sources.

- `teacher_forced`: P on Q's targets, `P(x, shift(Q(x)))` (what training optimises);
- `recurrent`: P on its own memories, token by token (what users get at inference);
- `memory_zeroed`: P with every memory set to zero (P as a plain sliding-window model).

Every evaluation window starts a fresh memory (m_{-1} = 0) at position 0, as in training.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from maglev_jax.inference import recurrent_memories
from maglev_jax.model import Maglev, Params, shift_memories
from sdm_jax import sharding
from sdm_jax.data.batches import eval_batches
from sdm_jax.data.tokenizer import BYTE_TOKEN_BYTES
from sdm_jax.metrics import evaluate_validation
from sdm_jax.models.lm import cross_entropy

MEMORY_SOURCES = ("teacher_forced", "recurrent", "memory_zeroed")


def memories_for(model: Maglev, params: Params, tokens: jax.Array, source: str) -> jax.Array:
  """P's memories [B, T, d] over tokens [B, T] with memory from `source` (MEMORY_SOURCES)."""
  if source == "teacher_forced":
    targets = model.target_memories(params, tokens)
    return model.decoder_hidden(params, tokens, shift_memories(targets))
  if source == "recurrent":
    return recurrent_memories(model, params, tokens)
  if source == "memory_zeroed":
    zeros = jnp.zeros((*tokens.shape, model.config.d_model),
                      jnp.dtype(model.config.compute_dtype))
    return model.decoder_hidden(params, tokens, zeros)
  raise ValueError(f"source must be one of {MEMORY_SOURCES}, got {source!r}")


def maglev_nll_fn(model: Maglev, source: str) -> Callable[[Params, jax.Array, jax.Array],
                                                          jax.Array]:
  """Jitted per-token nats: (params, inputs [B, T], targets [B, T]) -> [B, T]."""
  if source not in MEMORY_SOURCES:
    raise ValueError(f"source must be one of {MEMORY_SOURCES}, got {source!r}")

  def nll(params, inputs, targets):
    memories = memories_for(model, params, inputs, source)
    return sharding.gathered(cross_entropy(model.logits(params, memories), targets))
  return jax.jit(nll)


def _merge_sources(scored: dict[str, dict[str, Any]]) -> dict[str, Any]:
  """The evaluator's metrics from each source's `evaluate_validation` result (or from one
  position bucket of them): every source scores the same targets, so recurrent's counts
  are everyone's."""
  recurrent = scored["recurrent"]
  merged = {"val_bpb": recurrent["val_bpb"],
            **{f"bpb_{source}": result["val_bpb"] for source, result in scored.items()},
            "val_tokens": recurrent["val_tokens"], "val_bytes": recurrent["val_bytes"]}
  if "val_loss" in recurrent:
    merged.update(val_loss=recurrent["val_loss"],
                  **{f"loss_{source}": result["val_loss"] for source, result in scored.items()})
  return merged


def maglev_evaluator(model: Maglev, val_tokens: np.ndarray, *, batch_size: int, seq_len: int,
                     max_tokens: int | None,
                     token_bytes: np.ndarray | None = BYTE_TOKEN_BYTES,
                     bucket_width: int | None = None) -> Callable[[Params], dict[str, Any]]:
  """params -> {"val_bpb" (= bpb_recurrent), "bpb_<source>" for each source, "val_tokens",
  "val_bytes"} on the first max_tokens validation targets, with `token_bytes` [vocab]
  bytes per id (the byte tokenizer's by default). With None (bytes unknown) the BPBs are
  None, "loss_<source>" (mean nats per target) and "val_loss" (= loss_recurrent) stand in
  and "val_bpb_unavailable" says why.

  bucket_width: also "by_position", one entry per position bucket of the windows
  ([0, w), [w, 2w), ...; `sdm_jax.metrics.position_buckets`) with "start", "end" and the
  metrics above over the targets at those positions: with w the window, the first bucket
  is where memory cannot help yet (every window starts with m_{-1} = 0).
  """
  nll_fns = {source: maglev_nll_fn(model, source) for source in MEMORY_SOURCES}

  def evaluate(params: Params) -> dict[str, Any]:
    scored = {source: evaluate_validation(
        functools.partial(nll, params),
        eval_batches(val_tokens, batch_size=batch_size, seq_len=seq_len,
                     max_tokens=max_tokens), token_bytes=token_bytes,
        bucket_width=bucket_width) for source, nll in nll_fns.items()}
    result = _merge_sources(scored)
    if token_bytes is None:
      result["val_bpb_unavailable"] = scored["recurrent"]["val_bpb_unavailable"]
    if bucket_width is not None:
      buckets = zip(*(result["by_position"] for result in scored.values()))
      result["by_position"] = [
          {"start": bucket[0]["start"], "end": bucket[0]["end"],
           **_merge_sources(dict(zip(scored, bucket)))} for bucket in buckets]
    return result
  return evaluate
