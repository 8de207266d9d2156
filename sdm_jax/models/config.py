"""`LMConfig`: the description of a pattern-string language model."""

from __future__ import annotations

import dataclasses
from typing import Any

DTYPES = ("float32", "bfloat16")


@dataclasses.dataclass(frozen=True)
class LMConfig:
  """A decoder-only LM whose layers are named by a pattern string (DESIGN.md section 5).

  Attributes:
    vocab_size: number of token ids.
    d_model: residual width d.
    num_layers: depth; `pattern` is tiled to it (num_layers % len(pattern) == 0).
    pattern: one letter per layer: A full attention, S sliding-window attention,
      G Gated DeltaNet, M Sparse Delta Memory (letters registered in
      `sdm_jax.models.mixers.MIXERS`).
    num_heads: attention heads.
    head_dim: per-head dim; defaults to d_model // num_heads.
    window: keys per query of `S` layers.
    max_seq_len: the context length used for training and the `A` decode cache.
    mlp_ratio: MLP hidden width = mlp_ratio * d_model.
    mlp_activation: "relu2" or "swiglu".
    qk_norm: RMS-normalise queries and keys.
    rope_base: rotary wavelength base.
    attention_decode_impl: how `A` and `S` layers attend over their cache when decoding
      (`sdm_jax.ops.decode_attention.IMPLS`: "auto", "xla", "pallas", "pallas_gpu").
    logit_softcap: if set, logits = cap * tanh(logits / cap).
    compute_dtype: "float32" or "bfloat16" activations (parameters stay param_dtype).
    param_dtype: "float32" or "bfloat16".
    gdn_heads: heads of `G` layers (default num_heads).
    gdn_head_dim: key dim K per `G` head (default d_model // gdn_heads).
    gdn_expand_v: value dim per `G` head = gdn_expand_v * K.
    conv_kernel: taps of the short convolutions of `G` layers.
    gdn_chunk_size, gdn_impl: passed to `sdm_jax.ops.gated_delta_rule`.
    sdm_heads: heads H of `M` (Sparse Delta Memory) layers; value dim Dv = d_model / H.
    sdm_slots: memory slots N per `M` head, a perfect square (S = sqrt(N) sub-keys).
    sdm_writes, sdm_reads: slots W written and R read per token and head.
    sdm_error: "shared" (the trained form) or "per_slot" (the paper's Eq. 4).
    sdm_learn_m0: learn the initial table M0 [H, N, Dv]; False starts from zeros.
    sdm_chunk_size, sdm_impl: passed to `sdm_jax.ops.sparse_delta_rule`.
    sdm_topk_impl: passed to `sdm_jax.ops.product_key_topk` (`product_key.IMPLS`: "auto",
      "xla", "pallas", "pallas_gpu", "pallas_tpu").
    sdm_memory_dtype: storage of `M` tables: "float32", "bfloat16", or None (bfloat16 on
      GPU with bfloat16 activations, float32 otherwise; see `SparseDeltaMemory`).
    sdm_balance_weight: weight of the `M` layers' addressing balance in the training loss
      (`sdm_jax.ops.slot_balance`, averaged over layers; `lm.logits_and_penalty`); 0: off.
    sdm_tied_addressing_init: `M` layers' read projection starts as a copy of their write
      projection (`SparseDeltaMemory.tied_addressing_init`); False: independent draws.
  """

  vocab_size: int = 259
  d_model: int = 128
  num_layers: int = 4
  pattern: str = "AAAA"
  num_heads: int = 4
  head_dim: int | None = None
  window: int = 64
  max_seq_len: int = 256
  mlp_ratio: float = 4.0
  mlp_activation: str = "relu2"
  qk_norm: bool = True
  rope_base: float = 10_000.0
  attention_decode_impl: str = "auto"
  logit_softcap: float | None = None
  compute_dtype: str = "float32"
  param_dtype: str = "float32"
  gdn_heads: int | None = None
  gdn_head_dim: int | None = None
  gdn_expand_v: float = 1.0
  conv_kernel: int = 4
  gdn_chunk_size: int = 64
  gdn_impl: str = "auto"
  sdm_heads: int = 1
  sdm_slots: int = 1024
  sdm_writes: int = 32
  sdm_reads: int = 32
  sdm_error: str = "shared"
  sdm_learn_m0: bool = True
  sdm_chunk_size: int = 32
  sdm_impl: str = "auto"
  sdm_topk_impl: str = "auto"
  sdm_memory_dtype: str | None = None
  sdm_balance_weight: float = 0.0
  sdm_tied_addressing_init: bool = False

  def __post_init__(self):
    # Imported here: the mixer registry imports layer modules that may need the config.
    from sdm_jax.models.mixers import MIXERS  # pylint: disable=g-import-not-at-top

    positive = ("vocab_size", "d_model", "num_layers", "num_heads", "window", "max_seq_len")
    for name in positive:
      if getattr(self, name) < 1:
        raise ValueError(f"LMConfig.{name} must be >= 1, got {getattr(self, name)}")
    if not self.pattern:
      raise ValueError("LMConfig.pattern must be a non-empty string of layer letters")
    unknown = sorted(set(self.pattern) - set(MIXERS))
    if unknown:
      raise ValueError(f"LMConfig.pattern has unknown layer letters {unknown}; "
                       f"known letters: {', '.join(f'{k} ({v.description})' for k, v in MIXERS.items())}")
    if self.num_layers % len(self.pattern):
      raise ValueError(f"LMConfig.num_layers ({self.num_layers}) must be a multiple of the "
                       f"pattern length ({len(self.pattern)}, pattern {self.pattern!r})")
    if self.head_dim is None and self.d_model % self.num_heads:
      raise ValueError(f"LMConfig.d_model ({self.d_model}) must be divisible by num_heads "
                       f"({self.num_heads}) unless head_dim is given")
    if "S" in self.pattern and self.window > self.max_seq_len:
      raise ValueError(f"LMConfig.window ({self.window}) must not exceed max_seq_len "
                       f"({self.max_seq_len})")
    for name in ("compute_dtype", "param_dtype"):
      if getattr(self, name) not in DTYPES:
        raise ValueError(f"LMConfig.{name} must be one of {DTYPES}, got {getattr(self, name)!r}")
    if self.logit_softcap is not None and self.logit_softcap <= 0:
      raise ValueError(f"LMConfig.logit_softcap must be positive or None, got {self.logit_softcap}")
    if self.mlp_activation not in ("relu2", "swiglu"):
      raise ValueError(f"LMConfig.mlp_activation must be 'relu2' or 'swiglu', got "
                       f"{self.mlp_activation!r}")

    if set("AS") & set(self.pattern):
      from sdm_jax.ops.decode_attention import IMPLS  # pylint: disable=g-import-not-at-top
      if self.attention_decode_impl not in IMPLS:
        raise ValueError(f"LMConfig.attention_decode_impl must be one of {IMPLS}, got "
                         f"{self.attention_decode_impl!r}")

    if "G" in self.pattern:
      from sdm_jax.ops.gated_delta import IMPLS  # pylint: disable=g-import-not-at-top
      if self.gdn_impl not in IMPLS:
        raise ValueError(f"LMConfig.gdn_impl must be one of {IMPLS}, got {self.gdn_impl!r}")
      for name in ("gdn_chunk_size", "conv_kernel"):
        if getattr(self, name) < 1:
          raise ValueError(f"LMConfig.{name} must be >= 1, got {getattr(self, name)}")
      if self.gdn_head_dim is None and self.d_model % self.resolved_gdn_heads:
        raise ValueError(f"LMConfig.d_model ({self.d_model}) must be divisible by gdn_heads "
                         f"({self.resolved_gdn_heads}) unless gdn_head_dim is given")
      if self.gdn_expand_v * self.resolved_gdn_head_dim != int(
          self.gdn_expand_v * self.resolved_gdn_head_dim) or self.gdn_expand_v <= 0:
        raise ValueError(f"LMConfig.gdn_expand_v ({self.gdn_expand_v}) times the head dim "
                         f"({self.resolved_gdn_head_dim}) must be a positive integer")

    if "M" in self.pattern:
      self._check_sdm()
    elif self.sdm_balance_weight:
      raise ValueError(f"LMConfig.sdm_balance_weight ({self.sdm_balance_weight}) weighs the "
                       f"`M` layers' addressing; pattern {self.pattern!r} has none")

  def _check_sdm(self):
    # Imported here for the same reason as the mixer registry above.
    # pylint: disable=g-import-not-at-top
    from sdm_jax.layers.sparse_delta_memory import MEMORY_DTYPES, sub_keys_per_head
    from sdm_jax.ops import product_key
    from sdm_jax.ops.sparse_delta import IMPLS
    from sdm_jax.ops.sparse_delta.checks import ERROR_FORMS
    # pylint: enable=g-import-not-at-top
    for name in ("sdm_heads", "sdm_chunk_size"):
      if getattr(self, name) < 1:
        raise ValueError(f"LMConfig.{name} must be >= 1, got {getattr(self, name)}")
    if self.d_model % self.sdm_heads:
      raise ValueError(f"LMConfig.d_model ({self.d_model}) must be divisible by sdm_heads "
                       f"({self.sdm_heads})")
    try:
      sub_keys_per_head(self.sdm_slots)
    except ValueError:
      raise ValueError(f"LMConfig.sdm_slots must be a perfect square (N = S * S slots per "
                       f"head, e.g. 1024 or 4096), got {self.sdm_slots}") from None
    for name in ("sdm_writes", "sdm_reads"):
      if not 1 <= getattr(self, name) <= self.sdm_slots:
        raise ValueError(f"LMConfig.{name} must be in [1, sdm_slots] = [1, {self.sdm_slots}], "
                         f"got {getattr(self, name)}")
    if not self.sdm_balance_weight >= 0:
      raise ValueError(f"LMConfig.sdm_balance_weight must be >= 0, got "
                       f"{self.sdm_balance_weight}")
    if not isinstance(self.sdm_tied_addressing_init, bool):
      raise ValueError(f"LMConfig.sdm_tied_addressing_init must be a bool, got "
                       f"{self.sdm_tied_addressing_init!r}")
    if self.sdm_error not in ERROR_FORMS:
      raise ValueError(f"LMConfig.sdm_error must be one of {ERROR_FORMS}, got {self.sdm_error!r}")
    if self.sdm_impl not in IMPLS:
      raise ValueError(f"LMConfig.sdm_impl must be one of {IMPLS}, got {self.sdm_impl!r}")
    if self.sdm_topk_impl not in product_key.IMPLS:
      raise ValueError(f"LMConfig.sdm_topk_impl must be one of {product_key.IMPLS}, got "
                       f"{self.sdm_topk_impl!r}")
    if self.sdm_memory_dtype not in MEMORY_DTYPES + (None,):
      raise ValueError(f"LMConfig.sdm_memory_dtype must be one of {MEMORY_DTYPES} or None, got "
                       f"{self.sdm_memory_dtype!r}")

  @property
  def resolved_gdn_heads(self) -> int:
    return self.gdn_heads if self.gdn_heads is not None else self.num_heads

  @property
  def resolved_gdn_head_dim(self) -> int:
    if self.gdn_head_dim is not None:
      return self.gdn_head_dim
    return self.d_model // self.resolved_gdn_heads

  @property
  def layer_kinds(self) -> str:
    """The pattern tiled to num_layers: one letter per layer."""
    return self.pattern * (self.num_layers // len(self.pattern))

  @property
  def resolved_head_dim(self) -> int:
    return self.head_dim if self.head_dim is not None else self.d_model // self.num_heads

  @property
  def mlp_hidden_dim(self) -> int:
    return int(self.mlp_ratio * self.d_model)

  @classmethod
  def from_dict(cls, values: dict[str, Any]) -> "LMConfig":
    """Builds a config from a plain mapping, naming unknown fields in the error."""
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - known)
    if unknown:
      raise ValueError(f"unknown LMConfig fields {unknown}; known fields: {sorted(known)}")
    return cls(**dict(values))

  def to_dict(self) -> dict[str, Any]:
    return dataclasses.asdict(self)
