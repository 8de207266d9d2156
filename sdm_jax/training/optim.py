"""AdamW with linear warmup, cosine decay, gradient clipping and a weight-decay mask."""

from __future__ import annotations

import jax
import optax

from sdm_jax.training.config import TrainConfig

# Parameters that are never decayed, by leaf name: gains, biases and the recurrent gates'
# time-constant parameters (decaying them would pull the gates toward a fixed value), and
# the SDM initial table M0 (memory content, not a weight: DESIGN.md 3.3).
NO_DECAY_NAMES = ("scale", "bias", "A_log", "dt_bias", "M0")


def learning_rate_schedule(peak_lr: float, warmup_steps: int, total_steps: int,
                           min_lr_ratio: float = 0.1) -> optax.Schedule:
  """Linear warmup from 0 to peak_lr over warmup_steps, then cosine to min_lr_ratio * peak."""
  if total_steps < 1:
    raise ValueError(f"total_steps must be >= 1, got {total_steps}")
  if not 0 <= warmup_steps <= total_steps:
    raise ValueError(f"warmup_steps must be in [0, total_steps={total_steps}], got {warmup_steps}")
  if warmup_steps == total_steps:  # no room left for a decay phase
    return optax.linear_schedule(0.0, peak_lr, max(warmup_steps, 1))
  return optax.warmup_cosine_decay_schedule(
      init_value=0.0, peak_value=peak_lr, warmup_steps=warmup_steps,
      decay_steps=total_steps, end_value=peak_lr * min_lr_ratio)


def decay_mask(params) -> dict:
  """True for leaves that get weight decay: matrices, except names in NO_DECAY_NAMES."""
  def decays(path, leaf) -> bool:
    name = getattr(path[-1], "key", str(path[-1]))
    return leaf.ndim >= 2 and name not in NO_DECAY_NAMES
  return jax.tree_util.tree_map_with_path(decays, params)


def make_optimizer(*, peak_lr: float, warmup_steps: int, total_steps: int,
                   weight_decay: float = 0.1, grad_clip: float | None = 1.0,
                   b1: float = 0.9, b2: float = 0.95,
                   min_lr_ratio: float = 0.1) -> optax.GradientTransformation:
  """Global-norm clipping followed by AdamW on the schedule above."""
  schedule = learning_rate_schedule(peak_lr, warmup_steps, total_steps, min_lr_ratio)
  parts = []
  if grad_clip is not None:
    parts.append(optax.clip_by_global_norm(grad_clip))
  parts.append(optax.adamw(schedule, b1=b1, b2=b2, weight_decay=weight_decay, mask=decay_mask))
  return optax.chain(*parts)


def optimizer_for(config: TrainConfig):
  """The AdamW + schedule + clipping of a TrainConfig."""
  return make_optimizer(
      peak_lr=config.peak_lr, warmup_steps=config.warmup_steps, total_steps=config.steps,
      weight_decay=config.weight_decay, grad_clip=config.grad_clip, b1=config.b1, b2=config.b2,
      min_lr_ratio=config.min_lr_ratio)
