"""Bits per byte: the tokenizer-independent language-modelling metric.

BPB = (sum of per-target nats) / (ln 2 * bytes of those targets). Targets that stand for
zero bytes (special tokens such as BOS) are left out of both sums, as are masked
positions (the convention of nanochat's `loss_eval.evaluate_bpb`), so a model gains nothing
from predicting document boundaries and scores stay comparable across tokenizers.

Byte lengths come from the byte tokenizer unless a `token_bytes` table [vocab] is given
(needed for pre-tokenised corpora with another tokenizer).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from sdm_jax.data.tokenizer import token_byte_lengths


def bits_per_byte(total_nats: float, total_bytes: int) -> float:
  """total_nats / (ln 2 * total_bytes)."""
  if total_bytes <= 0:
    raise ValueError(f"total_bytes must be > 0, got {total_bytes}")
  return float(total_nats) / (math.log(2.0) * float(total_bytes))


def _target_bytes(targets: np.ndarray, token_bytes: np.ndarray | None) -> np.ndarray:
  """Bytes per target id, same shape as `targets`, as int64."""
  if token_bytes is None:
    return token_byte_lengths(targets).astype(np.int64)
  token_bytes = np.asarray(token_bytes)
  if token_bytes.ndim != 1:
    raise ValueError(f"token_bytes must be 1-D [vocab], got shape {token_bytes.shape}")
  if targets.size and (targets.min() < 0 or targets.max() >= token_bytes.shape[0]):
    raise ValueError(
        f"target ids must lie in [0, {token_bytes.shape[0]}) (len(token_bytes)), got "
        f"values in [{targets.min()}, {targets.max()}]")
  return token_bytes[targets].astype(np.int64)


def unigram_bits_per_byte(train_tokens: np.ndarray, val_tokens: np.ndarray,
                          vocab_size: int, *,
                          token_bytes: np.ndarray | None = None) -> float:
  """BPB on `val_tokens[1:]` of an add-one-smoothed unigram model fitted on `train_tokens`.

  p(v) = (count_train(v) + 1) / (len(train_tokens) + vocab_size) for v < vocab_size;
  the targets are scored with the byte convention of this module. A trained model that
  does not beat this baseline has learnt nothing beyond byte frequencies.
  """
  if vocab_size < 1:
    raise ValueError(f"vocab_size must be >= 1, got {vocab_size}")
  train_tokens = np.asarray(train_tokens).reshape(-1)
  val_tokens = np.asarray(val_tokens).reshape(-1)
  for name, tokens in (("train_tokens", train_tokens), ("val_tokens", val_tokens)):
    if not np.issubdtype(tokens.dtype, np.integer):
      raise ValueError(f"{name} must hold integer ids, got dtype {tokens.dtype}")
    if tokens.size and (tokens.min() < 0 or tokens.max() >= vocab_size):
      raise ValueError(
          f"{name} must lie in [0, {vocab_size}) (vocab_size), got values in "
          f"[{tokens.min()}, {tokens.max()}]")
  counts = np.bincount(train_tokens, minlength=vocab_size).astype(np.float64) + 1.0
  log_probs = np.log(counts) - np.log(counts.sum())
  targets = val_tokens[1:]
  target_bytes = _target_bytes(targets, token_bytes)
  scored = target_bytes > 0
  total_nats = -float(log_probs[targets[scored]].sum())
  return bits_per_byte(total_nats, int(target_bytes.sum()))


def evaluate_bpb(nll_fn: Callable[[np.ndarray, np.ndarray], Any],
                 batches: Iterable[Mapping[str, np.ndarray]], *,
                 token_bytes: np.ndarray | None = None) -> dict[str, float | int]:
  """Bits per byte of a model over evaluation batches.

  Args:
    nll_fn: (inputs [b, T] int32, targets [b, T] int32) -> per-position nats [b, T]
      (numpy or jax; typically a jitted model call).
    batches: dicts with "inputs", "targets" and "mask" [b, T] (1 scored, 0 padding), as
      `eval_batches` yields.
    token_bytes: optional [vocab] bytes per token id; default: the byte tokenizer's.

  Returns:
    {"val_bpb": float, "tokens": targets scored, "bytes": their bytes,
     "nats": their summed nats}; sums are accumulated in float64 on the host.
  """
  total_nats = 0.0
  total_bytes = 0
  total_tokens = 0
  for batch in batches:
    targets = np.asarray(batch["targets"])
    mask = np.asarray(batch["mask"])
    if mask.shape != targets.shape:
      raise ValueError(
          f"mask shape {mask.shape} must equal targets shape {targets.shape}")
    nats = np.asarray(nll_fn(batch["inputs"], batch["targets"]), dtype=np.float64)
    if nats.shape != targets.shape:
      raise ValueError(
          f"nll_fn must return per-position nats of shape {targets.shape} (targets), got "
          f"{nats.shape}")
    target_bytes = _target_bytes(targets, token_bytes) * (mask > 0)
    scored = target_bytes > 0
    # Select rather than multiply, so padded positions with inf/nan loss cannot leak in.
    total_nats += float(nats[scored].sum())
    total_bytes += int(target_bytes.sum())
    total_tokens += int(scored.sum())
  if total_bytes == 0:
    raise ValueError("batches contain no scored targets (all masked or zero-byte)")
  return {
      "val_bpb": bits_per_byte(total_nats, total_bytes),
      "tokens": total_tokens,
      "bytes": total_bytes,
      "nats": total_nats,
  }
