"""Training and data settings (plain frozen dataclasses; the CLIs fill them from configs)."""

from __future__ import annotations

import dataclasses
from typing import Any

from sdm_jax.data.corpus import TOKEN_DTYPES
from sdm_jax.sharding import parse_mesh


def _from_dict(cls, values: dict[str, Any]):
  known = {f.name for f in dataclasses.fields(cls)}
  unknown = sorted(set(values) - known)
  if unknown:
    raise ValueError(f"unknown {cls.__name__} fields {unknown}; known fields: {sorted(known)}")
  return cls(**dict(values))


@dataclasses.dataclass(frozen=True)
class TrainConfig:
  """How to train: batch, steps, optimizer and the logging/eval/checkpoint cadence.

  Attributes:
    batch_size: sequences per step (global, split over the data devices).
    seq_len: tokens per training sequence (<= the model's max_seq_len).
    steps: total optimizer steps.
    peak_lr, warmup_steps, min_lr_ratio: the warmup + cosine schedule.
    weight_decay, grad_clip, b1, b2: AdamW and global-norm clipping.
    m0_lr_multiplier: scales the updates of SDM's learned initial tables M0 (leaves named
      "M0"): their learning rate is m0_lr_multiplier times the schedule's. 1.0: the same
      rate as every other parameter; 0.0 freezes M0 at its initialisation.
    seed: parameter init and batch sampling (batches are a function of (seed, step)).
    log_every: steps between progress lines and metrics.jsonl records.
    eval_every: steps between validation BPB evaluations (0: only at the end).
    checkpoint_every: steps between checkpoints (the last step is always saved).
    keep_checkpoints: how many recent checkpoints to keep.
    eval_batch_size: sequences per evaluation batch.
    eval_tokens: validation targets scored per evaluation (None: the whole split).
    eval_bucket_width: also report the validation BPB per position bucket of the windows,
      [0, w), [w, 2w), ... (`metrics.position_buckets`), under "by_position" (None: not).
    num_devices: devices used (None: all of them; must be None with several processes).
    mesh: how the devices used are arranged, "data=2,fsdp=2,model=2" style (axes left out
      are 1; the product must equal the devices used): data splits the batch, fsdp splits
      the batch and shards parameters and optimizer state (ZeRO-3), model splits SDM's
      tables and M0 along the value columns and GDN/attention heads (`sdm_jax.sharding`).
      None: every device on data (plain data parallelism).
  """

  batch_size: int = 16
  seq_len: int = 256
  steps: int = 100
  peak_lr: float = 3e-3
  warmup_steps: int = 10
  min_lr_ratio: float = 0.1
  weight_decay: float = 0.1
  grad_clip: float | None = 1.0
  b1: float = 0.9
  b2: float = 0.95
  m0_lr_multiplier: float = 1.0
  seed: int = 0
  log_every: int = 10
  eval_every: int = 0
  checkpoint_every: int = 50
  keep_checkpoints: int = 3
  eval_batch_size: int = 16
  eval_tokens: int | None = 65_536
  eval_bucket_width: int | None = None
  num_devices: int | None = None
  mesh: str | None = None

  def __post_init__(self):
    for name in ("batch_size", "seq_len", "steps", "log_every", "checkpoint_every",
                 "keep_checkpoints", "eval_batch_size"):
      if getattr(self, name) < 1:
        raise ValueError(f"TrainConfig.{name} must be >= 1, got {getattr(self, name)}")
    if self.eval_every < 0:
      raise ValueError(f"TrainConfig.eval_every must be >= 0, got {self.eval_every}")
    if not 0 <= self.warmup_steps <= self.steps:
      raise ValueError(f"TrainConfig.warmup_steps must be in [0, steps={self.steps}], got "
                       f"{self.warmup_steps}")
    if not self.m0_lr_multiplier >= 0:  # also refuses NaN
      raise ValueError(f"TrainConfig.m0_lr_multiplier must be >= 0, got "
                       f"{self.m0_lr_multiplier}")
    if self.eval_tokens is not None and self.eval_tokens < 1:
      raise ValueError(f"TrainConfig.eval_tokens must be >= 1 or None, got {self.eval_tokens}")
    if self.eval_bucket_width is not None and self.eval_bucket_width < 1:
      raise ValueError(f"TrainConfig.eval_bucket_width must be >= 1 or None, got "
                       f"{self.eval_bucket_width}")
    if self.mesh is not None:
      sizes = parse_mesh(self.mesh)
      if self.batch_size % (sizes["data"] * sizes["fsdp"]):
        raise ValueError(f"TrainConfig.batch_size ({self.batch_size}) must be divisible by the "
                         f"devices the batch is split over: data x fsdp = "
                         f"{sizes['data'] * sizes['fsdp']} in TrainConfig.mesh {self.mesh!r}")

  from_dict = classmethod(_from_dict)


@dataclasses.dataclass(frozen=True)
class DataConfig:
  """Where the tokens come from, and what their ids stand for.

  Attributes:
    path: None for the embedded corpus (Python standard-library sources), else a text
      file, a directory of text files, a pre-tokenised .npy / .u16.bin / .u32.bin file, or
      a directory holding train.bin and val.bin (nanoGPT's layout; its own split).
    val_fraction: share of documents (or of a single file) held out for validation (not
      used by a train.bin/val.bin directory).
    max_train_bytes: read at most this much training text (None: all), for quick runs.
    token_dtype: dtype of the ids in train.bin/val.bin: "uint16" or "uint32".
    tokenizer: what the ids are: "byte" (text is read with the byte tokenizer), "none"
      (pre-tokenised ids without a tokenizer: samples print as ids) or a tiktoken encoding
      ("gpt2", ...; optional dependency) that decodes samples and gives token_bytes.
    token_bytes: a .npy table [vocab] of the bytes each id stands for, used for bits per
      byte (None: the tokenizer's; without either, BPB is not reported).
  """

  path: str | None = None
  val_fraction: float = 0.05
  max_train_bytes: int | None = None
  token_dtype: str = "uint16"
  tokenizer: str = "byte"
  token_bytes: str | None = None

  def __post_init__(self):
    if not 0 < self.val_fraction < 1:
      raise ValueError(f"DataConfig.val_fraction must be in (0, 1), got {self.val_fraction}")
    if self.max_train_bytes is not None and self.max_train_bytes < 1:
      raise ValueError(f"DataConfig.max_train_bytes must be >= 1 or None, got "
                       f"{self.max_train_bytes}")
    if self.token_dtype not in TOKEN_DTYPES:
      raise ValueError(f"DataConfig.token_dtype must be one of {sorted(TOKEN_DTYPES)}, got "
                       f"{self.token_dtype!r}")
    if not isinstance(self.tokenizer, str) or not self.tokenizer:
      raise ValueError(f"DataConfig.tokenizer must be 'byte', 'none' or a tiktoken encoding "
                       f"name, got {self.tokenizer!r}")
    if self.token_bytes is not None and not str(self.token_bytes).endswith(".npy"):
      raise ValueError(f"DataConfig.token_bytes must be a .npy file or None, got "
                       f"{self.token_bytes!r}")

  from_dict = classmethod(_from_dict)
