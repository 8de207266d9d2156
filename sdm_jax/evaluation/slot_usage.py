"""How much of Sparse Delta Memory's table a model uses, per `M` layer ("layer_<i>_M").

Two measures, both exact:
- `written_slots`: the slots that a trained model's write addressing picks on given
  sequences (the product-key top-W of its key projection, recomputed from the captured
  projection outputs with the layer's own `addressing`), as a fraction of the H * N slots:
  per sequence (mean over sequences) and over all of them together.
- `trained_m0_rows`: the rows of the learned initial table M0 that training changed. M0's
  gradient is zero on every row no token addressed (neither wrote nor read before a
  write), Adam moves no parameter whose gradient was always zero, and M0 has no weight
  decay, so this is the fraction of slots addressed at least once during training
  (`TrainConfig.m0_lr_multiplier=0` leaves it at zero).
"""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from sdm_jax.layers.sparse_delta_memory import (INITIAL_MEMORY_NAME, SparseDeltaMemory,
                                                addressing)
from sdm_jax.models.lm import LM

_KEY_PROJECTION = "key_proj"


def _layer_name(block_name: str) -> str:
  return f"layer_{block_name.split('_')[1]}_M"


def _is_write_projection(module: nn.Module, method_name: str) -> bool:
  return (method_name == "__call__" and module.name == _KEY_PROJECTION
          and isinstance(module.parent, SparseDeltaMemory))


def _marked_slots(model: LM):
  """jitted (params, tokens [B, T]) -> {layer: (slots written per sequence and head [B, H]
  int32, written by any sequence [H, N] bool)}."""
  config = model.config

  def marks(params, tokens):
    _, captured = model.apply(params, tokens, capture_intermediates=_is_write_projection,
                              mutable=["intermediates"])
    result = {}
    for block_name, block in captured.get("intermediates", {}).items():
      scores = block["mixer"][_KEY_PROJECTION]["__call__"][0]
      batch, length, _ = scores.shape
      scores = scores.reshape(batch, length, config.sdm_heads, -1)
      ids, _ = addressing(scores, config.sdm_writes, config.sdm_topk_impl)  # [B, T, H, W]
      ids = jnp.moveaxis(ids, 2, 1).reshape(batch, config.sdm_heads, -1)
      written = jax.vmap(jax.vmap(
          lambda row: jnp.zeros(config.sdm_slots, bool).at[row].set(True)))(ids)
      result[_layer_name(block_name)] = (jnp.sum(written, axis=-1, dtype=jnp.int32),
                                         jnp.any(written, axis=0))
    return result
  return jax.jit(marks)


def written_slots(model: LM, params: Any, inputs: np.ndarray, *, batch_size: int
                  ) -> dict[str, dict[str, float]]:
  """Slots written by the model on `inputs` (int32 [n, T]), per `M` layer:

  {"layer_<i>_M": {"written_fraction": slots written by at least one token of at least
  one sequence / (H * N), "written_per_sequence_fraction": mean over sequences of the
  slots each writes / (H * N)}}; {} for a model without `M` layers.
  """
  inputs = np.asarray(inputs)
  if inputs.ndim != 2 or inputs.shape[0] < 1:
    raise ValueError(f"inputs must be int32 [n, T] with n >= 1, got shape {inputs.shape}")
  if batch_size < 1:
    raise ValueError(f"batch_size must be >= 1, got {batch_size}")
  marks = _marked_slots(model)
  per_sequence: dict[str, list[np.ndarray]] = {}
  union: dict[str, np.ndarray] = {}
  for start in range(0, inputs.shape[0], batch_size):
    for layer, (counts, written) in marks(params, jnp.asarray(
        inputs[start:start + batch_size])).items():
      per_sequence.setdefault(layer, []).append(np.asarray(counts))
      union[layer] = np.asarray(written) | union.get(layer, False)
  slots = model.config.sdm_heads * model.config.sdm_slots
  return {layer: {"written_fraction": float(union[layer].sum() / slots),
                  "written_per_sequence_fraction": float(
                      np.concatenate(counts).sum(axis=-1).mean() / slots)}
          for layer, counts in per_sequence.items()}


def trained_m0_rows(initial_params: Any, params: Any) -> dict[str, float]:
  """{"layer_<i>_M": fraction of M0's H * N rows that differ between initial_params and
  params}: the slots addressed at least once in the training between them (module
  docstring); {} without a learned M0."""
  result = {}
  flat_initial = dict(jax.tree_util.tree_flatten_with_path(initial_params)[0])
  for path, leaf in jax.tree_util.tree_flatten_with_path(params)[0]:
    names = [getattr(p, "key", str(p)) for p in path]
    if names[-1] != INITIAL_MEMORY_NAME:
      continue
    block = next(name for name in names if name.startswith("block_"))
    changed = np.any(np.asarray(leaf) != np.asarray(flat_initial[path]), axis=-1)  # [H, N]
    result[_layer_name(block)] = float(changed.mean())
  return result
