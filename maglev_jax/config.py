"""`MaglevConfig`: the decoder P (an all-`S` LMConfig), the prefiller Q and the training loss."""

from __future__ import annotations

import dataclasses

from sdm_jax.models.config import LMConfig

SHARING = ("separate", "shared")
# Q's layers are attention blocks, so that `shared` can run P's blocks with Q's windows.
PREFILLER_LETTERS = ("S", "A")


@dataclasses.dataclass(frozen=True)
class MaglevConfig(LMConfig):
  """Maglev (DESIGN.md section 6): the LMConfig fields describe the decoder P.

  Attributes (besides LMConfig's):
    pattern: P's layer letters; only `S` (sliding-window attention) is allowed, so that
      the inference state stays bounded by the window.
    prefiller_pattern: Q's layer letters (`S`, `A`), tiled to prefiller_num_layers;
      "SA" is the paper's SLSL.
    prefiller_num_layers: Q's depth (None: num_layers; `shared` needs num_layers).
    sharing: "separate" (Q and P have their own blocks) or "shared" (Q runs P's blocks
      with its own residual scalings and final norm). Embedding and LM head are always
      common to both: m' lives in P's hidden space.
    memory_loss_weight: lambda in `CE + lambda * mean_t ||m_t - m'_t||_2 / sqrt(d)`.
    stop_gradient_target: block the memory loss's gradient into Q (m' is then a fixed
      target for P; Q still learns through P's CE on the injected m').
    prefiller_ce_weight: weight of an auxiliary next-token CE on Q's memories (0: none).
  """

  pattern: str = "S"
  prefiller_pattern: str = "SA"
  prefiller_num_layers: int | None = None
  sharing: str = "separate"
  memory_loss_weight: float = 1.0
  stop_gradient_target: bool = False
  prefiller_ce_weight: float = 0.0

  def __post_init__(self):
    super().__post_init__()
    if set(self.pattern) != {"S"}:
      raise ValueError(f"MaglevConfig.pattern (the decoder P) must contain only 'S' "
                       f"(sliding-window attention), got {self.pattern!r}")
    if not self.prefiller_pattern or set(self.prefiller_pattern) - set(PREFILLER_LETTERS):
      raise ValueError(f"MaglevConfig.prefiller_pattern must be a non-empty string of "
                       f"{PREFILLER_LETTERS}, got {self.prefiller_pattern!r}")
    if self.sharing not in SHARING:
      raise ValueError(f"MaglevConfig.sharing must be one of {SHARING}, got {self.sharing!r}")
    depth = self.resolved_prefiller_num_layers
    if depth < 1 or depth % len(self.prefiller_pattern):
      raise ValueError(f"MaglevConfig.prefiller_num_layers ({depth}) must be a positive "
                       f"multiple of len(prefiller_pattern) ({len(self.prefiller_pattern)})")
    if self.sharing == "shared" and depth != self.num_layers:
      raise ValueError(f"MaglevConfig.prefiller_num_layers ({depth}) must equal num_layers "
                       f"({self.num_layers}) when sharing='shared'")
    for name in ("memory_loss_weight", "prefiller_ce_weight"):
      if getattr(self, name) < 0:
        raise ValueError(f"MaglevConfig.{name} must be >= 0, got {getattr(self, name)}")

  @property
  def resolved_prefiller_num_layers(self) -> int:
    return self.num_layers if self.prefiller_num_layers is None else self.prefiller_num_layers

  def _lm_fields(self) -> dict:
    return {f.name: getattr(self, f.name) for f in dataclasses.fields(LMConfig)}

  def decoder_config(self) -> LMConfig:
    """P as a plain LMConfig: the SWA baseline of the same size and window."""
    return LMConfig(**self._lm_fields())

  def prefiller_config(self) -> LMConfig:
    """Q as a plain LMConfig (same widths as P, Q's pattern and depth)."""
    return LMConfig(**{**self._lm_fields(), "pattern": self.prefiller_pattern,
                       "num_layers": self.resolved_prefiller_num_layers})
