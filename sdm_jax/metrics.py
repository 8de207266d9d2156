"""Bits per byte: the tokenizer-independent language-modelling metric.

BPB = (sum of per-target nats) / (ln 2 * bytes of those targets). Targets that stand for
zero bytes (special tokens such as BOS) are left out of both sums, as are masked
positions (the convention of nanochat's `loss_eval.evaluate_bpb`), so a model gains nothing
from predicting document boundaries and scores stay comparable across tokenizers.

Byte lengths come from a `token_bytes` table [vocab] (`sdm_jax.data.token_bytes`), the
byte tokenizer's by default. Where no table is known (ids without a tokenizer),
`evaluate_validation` reports the mean loss per token instead and says why.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Mapping, NamedTuple

import numpy as np

from sdm_jax.data.tokenizer import BYTE_TOKEN_BYTES

# Why an evaluation without a token_bytes table reports no bits per byte.
BPB_UNAVAILABLE = ("bits per byte need the bytes of every token id: the data has no "
                   "tokenizer (data.tokenizer='none') and no table (data.token_bytes)")
# Tokens per chunk when counting a large (memory-mapped) stream, to bound memory.
_COUNT_CHUNK = 1 << 24


def bits_per_byte(total_nats: float, total_bytes: int) -> float:
  """total_nats / (ln 2 * total_bytes)."""
  if total_bytes <= 0:
    raise ValueError(f"total_bytes must be > 0, got {total_bytes}")
  return float(total_nats) / (math.log(2.0) * float(total_bytes))


def _target_bytes(targets: np.ndarray, token_bytes: np.ndarray) -> np.ndarray:
  """Bytes per target id, same shape as `targets`, as int64."""
  token_bytes = np.asarray(token_bytes)
  if token_bytes.ndim != 1:
    raise ValueError(f"token_bytes must be 1-D [vocab], got shape {token_bytes.shape}")
  if targets.size and (targets.min() < 0 or targets.max() >= token_bytes.shape[0]):
    raise ValueError(
        f"target ids must lie in [0, {token_bytes.shape[0]}) (len(token_bytes)), got "
        f"values in [{targets.min()}, {targets.max()}]")
  return token_bytes[targets].astype(np.int64)


def _check_ids(name: str, tokens: np.ndarray, vocab_size: int) -> None:
  if not np.issubdtype(tokens.dtype, np.integer):
    raise ValueError(f"{name} must hold integer ids, got dtype {tokens.dtype}")
  if tokens.size and (tokens.min() < 0 or tokens.max() >= vocab_size):
    raise ValueError(
        f"{name} must lie in [0, {vocab_size}) (vocab_size), got values in "
        f"[{tokens.min()}, {tokens.max()}]")


def unigram_bits_per_byte(train_tokens: np.ndarray, val_tokens: np.ndarray,
                          vocab_size: int, *,
                          token_bytes: np.ndarray = BYTE_TOKEN_BYTES) -> float:
  """BPB on `val_tokens[1:]` of an add-one-smoothed unigram model fitted on `train_tokens`.

  p(v) = (count_train(v) + 1) / (len(train_tokens) + vocab_size) for v < vocab_size;
  the targets are scored with the byte convention of this module. A trained model that
  does not beat this baseline has learnt nothing beyond token frequencies. Streams are
  read in chunks, so memory-mapped corpora larger than RAM work.
  """
  if vocab_size < 1:
    raise ValueError(f"vocab_size must be >= 1, got {vocab_size}")
  train_tokens = np.asarray(train_tokens).reshape(-1)
  val_tokens = np.asarray(val_tokens).reshape(-1)
  counts = np.ones(vocab_size, dtype=np.float64)
  for start in range(0, train_tokens.size, _COUNT_CHUNK):
    chunk = np.asarray(train_tokens[start:start + _COUNT_CHUNK])
    _check_ids("train_tokens", chunk, vocab_size)
    counts += np.bincount(chunk, minlength=vocab_size)
  log_probs = np.log(counts) - np.log(counts.sum())
  total_nats, total_bytes = 0.0, 0
  for start in range(1, val_tokens.size, _COUNT_CHUNK):
    targets = np.asarray(val_tokens[start:start + _COUNT_CHUNK])
    _check_ids("val_tokens", targets, vocab_size)
    target_bytes = _target_bytes(targets, token_bytes)
    total_nats -= float(log_probs[targets[target_bytes > 0]].sum())
    total_bytes += int(target_bytes.sum())
  if val_tokens.size:
    _check_ids("val_tokens", val_tokens[:1], vocab_size)
  return bits_per_byte(total_nats, total_bytes)


class _PositionSums(NamedTuple):
  """Sums over the scored targets at each position of the evaluation windows, [T] each."""
  nats: np.ndarray
  bytes: np.ndarray
  tokens: np.ndarray


def _scored_sums(nll_fn: Callable[[np.ndarray, np.ndarray], Any],
                 batches: Iterable[Mapping[str, np.ndarray]],
                 token_bytes: np.ndarray | None
                 ) -> tuple[float, int, int, _PositionSums | None]:
  """(nats, bytes, tokens, by position) summed in float64 / int over the scored targets:
  the unmasked ones, and with a table only those of one byte or more (bytes is 0 without
  one). By position: the same sums per position of the windows (None without batches)."""
  total_nats = 0.0
  total_bytes = 0
  total_tokens = 0
  by_position = None
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
    scored = mask > 0
    target_bytes = np.zeros(targets.shape, np.int64)
    if token_bytes is not None:
      target_bytes = _target_bytes(targets, token_bytes) * scored
      scored = target_bytes > 0
      total_bytes += int(target_bytes.sum())
    # Select rather than multiply, so padded positions with inf/nan loss cannot leak in.
    total_nats += float(nats[scored].sum())
    total_tokens += int(scored.sum())
    if by_position is None:
      by_position = _PositionSums(*(np.zeros(targets.shape[-1], dtype)
                                    for dtype in (np.float64, np.int64, np.int64)))
    elif targets.shape[-1] != by_position.nats.shape[0]:
      raise ValueError(f"every batch must have {by_position.nats.shape[0]} positions, got "
                       f"targets of shape {targets.shape}")
    by_position.nats[:] += np.where(scored, nats, 0.0).sum(axis=0)
    by_position.bytes[:] += target_bytes.sum(axis=0)
    by_position.tokens[:] += scored.sum(axis=0)
  return total_nats, total_bytes, total_tokens, by_position


def position_buckets(seq_len: int, width: int) -> list[tuple[int, int]]:
  """[(0, w), (w, 2w), ..., (k w, seq_len)]: the positions of a window of seq_len split
  into buckets of `width` (the last one shorter when width does not divide seq_len)."""
  if width < 1:
    raise ValueError(f"bucket width must be >= 1, got {width}")
  if seq_len < 1:
    raise ValueError(f"seq_len must be >= 1, got {seq_len}")
  return [(start, min(start + width, seq_len)) for start in range(0, seq_len, width)]


def evaluate_bpb(nll_fn: Callable[[np.ndarray, np.ndarray], Any],
                 batches: Iterable[Mapping[str, np.ndarray]], *,
                 token_bytes: np.ndarray = BYTE_TOKEN_BYTES) -> dict[str, float | int]:
  """Bits per byte of a model over evaluation batches.

  Args:
    nll_fn: (inputs [b, T] int32, targets [b, T] int32) -> per-position nats [b, T]
      (numpy or jax; typically a jitted model call).
    batches: dicts with "inputs", "targets" and "mask" [b, T] (1 scored, 0 padding), as
      `eval_batches` yields.
    token_bytes: [vocab] bytes per token id; default: the byte tokenizer's.

  Returns:
    {"val_bpb": float, "tokens": targets scored, "bytes": their bytes,
     "nats": their summed nats}; sums are accumulated in float64 on the host.
  """
  if token_bytes is None:
    raise ValueError("token_bytes must be a [vocab] table of bytes per token id, got None")
  total_nats, total_bytes, total_tokens, _ = _scored_sums(nll_fn, batches, token_bytes)
  if total_bytes == 0:
    raise ValueError("batches contain no scored targets (all masked or zero-byte)")
  return {
      "val_bpb": bits_per_byte(total_nats, total_bytes),
      "tokens": total_tokens,
      "bytes": total_bytes,
      "nats": total_nats,
  }


def evaluate_loss(nll_fn: Callable[[np.ndarray, np.ndarray], Any],
                  batches: Iterable[Mapping[str, np.ndarray]]) -> dict[str, float | int]:
  """Mean nats per unmasked target: {"val_loss", "tokens", "nats"} (as `evaluate_bpb`,
  for ids whose bytes are unknown)."""
  total_nats, _, total_tokens, _ = _scored_sums(nll_fn, batches, None)
  if total_tokens == 0:
    raise ValueError("batches contain no scored targets (all masked)")
  return {"val_loss": total_nats / total_tokens, "tokens": total_tokens, "nats": total_nats}


def _validation_sums(nats: float, num_bytes: int, tokens: int,
                     token_bytes: np.ndarray | None) -> dict[str, Any]:
  """`evaluate_validation`'s metrics of scored sums; a BPB (or loss) of no targets is None."""
  if token_bytes is None:
    return {"val_bpb": None, "val_loss": nats / tokens if tokens else None,
            "val_tokens": int(tokens), "val_bytes": None}
  return {"val_bpb": bits_per_byte(nats, num_bytes) if num_bytes else None,
          "val_tokens": int(tokens), "val_bytes": int(num_bytes)}


def evaluate_validation(nll_fn: Callable[[np.ndarray, np.ndarray], Any],
                        batches: Iterable[Mapping[str, np.ndarray]], *,
                        token_bytes: np.ndarray | None,
                        bucket_width: int | None = None) -> dict[str, Any]:
  """What a training run reports on its validation split.

  With a `token_bytes` table: {"val_bpb", "val_tokens", "val_bytes"} (`evaluate_bpb`).
  With None (bytes unknown): {"val_bpb": None, "val_bpb_unavailable": BPB_UNAVAILABLE,
  "val_loss": mean nats per target, "val_tokens", "val_bytes": None}.

  bucket_width: also report the same metrics per position bucket of the windows,
  `position_buckets(T, bucket_width)`, under "by_position": [{"start", "end", "val_bpb",
  ["val_loss",] "val_tokens", "val_bytes"}] (a bucket without scored targets has None
  for its BPB / loss). The buckets' BPBs weighted by their bytes average to val_bpb.
  """
  if bucket_width is not None and bucket_width < 1:
    raise ValueError(f"bucket_width must be >= 1 or None, got {bucket_width}")
  nats, num_bytes, tokens, by_position = _scored_sums(nll_fn, batches, token_bytes)
  if token_bytes is None:
    if tokens == 0:
      raise ValueError("batches contain no scored targets (all masked)")
    result = {"val_bpb": None, "val_bpb_unavailable": BPB_UNAVAILABLE,
              **_validation_sums(nats, num_bytes, tokens, None)}
  else:
    if num_bytes == 0:
      raise ValueError("batches contain no scored targets (all masked or zero-byte)")
    result = _validation_sums(nats, num_bytes, tokens, token_bytes)
  if bucket_width is not None:
    result["by_position"] = [
        {"start": start, "end": end,
         **_validation_sums(float(by_position.nats[start:end].sum()),
                            int(by_position.bytes[start:end].sum()),
                            int(by_position.tokens[start:end].sum()), token_bytes)}
        for start, end in position_buckets(by_position.nats.shape[0], bucket_width)]
  return result
