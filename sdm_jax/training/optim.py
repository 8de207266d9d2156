"""AdamW with linear warmup, cosine decay, gradient clipping, a weight-decay mask and a
learning-rate multiplier for SDM's initial tables M0."""

from __future__ import annotations

import jax
import optax

from sdm_jax.layers.sparse_delta_memory import INITIAL_MEMORY_NAME
from sdm_jax.training.config import TrainConfig

# Parameters that are never decayed, by leaf name: gains, biases and the recurrent gates'
# time-constant parameters (decaying them would pull the gates toward a fixed value), and
# the SDM initial table M0 (memory content, not a weight: DESIGN.md 3.3).
NO_DECAY_NAMES = ("scale", "bias", "A_log", "dt_bias", INITIAL_MEMORY_NAME)


def _leaf_name(path) -> str:
  return getattr(path[-1], "key", str(path[-1]))


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
    return leaf.ndim >= 2 and _leaf_name(path) not in NO_DECAY_NAMES
  return jax.tree_util.tree_map_with_path(decays, params)


def initial_memory_mask(params) -> dict:
  """True for SDM's initial tables M0 (leaves named INITIAL_MEMORY_NAME)."""
  return jax.tree_util.tree_map_with_path(
      lambda path, leaf: _leaf_name(path) == INITIAL_MEMORY_NAME, params)


def make_optimizer(*, peak_lr: float, warmup_steps: int, total_steps: int,
                   weight_decay: float = 0.1, grad_clip: float | None = 1.0,
                   b1: float = 0.9, b2: float = 0.95, min_lr_ratio: float = 0.1,
                   m0_lr_multiplier: float = 1.0) -> optax.GradientTransformation:
  """Global-norm clipping followed by AdamW on the schedule above; M0's updates are then
  scaled by m0_lr_multiplier (M0 has no weight decay, so this is its learning rate times
  the multiplier). At 1.0 the chain has no scaling step, so its state, and checkpoints of
  it, are those of an optimizer without the option."""
  if not m0_lr_multiplier >= 0:
    raise ValueError(f"m0_lr_multiplier must be >= 0, got {m0_lr_multiplier}")
  schedule = learning_rate_schedule(peak_lr, warmup_steps, total_steps, min_lr_ratio)
  parts = []
  if grad_clip is not None:
    parts.append(optax.clip_by_global_norm(grad_clip))
  parts.append(optax.adamw(schedule, b1=b1, b2=b2, weight_decay=weight_decay, mask=decay_mask))
  if m0_lr_multiplier != 1.0:
    parts.append(optax.masked(optax.scale(m0_lr_multiplier), initial_memory_mask))
  return optax.chain(*parts)


def optimizer_for(config: TrainConfig):
  """The AdamW + schedule + clipping of a TrainConfig."""
  return make_optimizer(
      peak_lr=config.peak_lr, warmup_steps=config.warmup_steps, total_steps=config.steps,
      weight_decay=config.weight_decay, grad_clip=config.grad_clip, b1=config.b1, b2=config.b2,
      min_lr_ratio=config.min_lr_ratio, m0_lr_multiplier=config.m0_lr_multiplier)
