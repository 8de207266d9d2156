"""How much of Sparse Delta Memory's table a model uses, per `M` layer ("layer_<i>_M").

Three measures, all exact:
- `written_slots`: the slots that a trained model's write addressing picks on given
  sequences (the product-key top-W of its key projection, recomputed from the captured
  projection outputs with the layer's own `addressing`), as a fraction of the H * N slots:
  per sequence (mean over sequences) and over all of them together.
- `trained_m0_rows`: the rows of the learned initial table M0 that training changed. M0's
  gradient is zero on every row no token addressed (neither wrote nor read before a
  write), Adam moves no parameter whose gradient was always zero, and M0 has no weight
  decay, so this is the fraction of slots addressed at least once during training
  (`TrainConfig.m0_lr_multiplier=0` leaves it at zero).
- `read_write_overlap`: how many of the slots a model reads at given positions it wrote at
  given earlier positions (|J_t ∩ I_s| per head), beside W R / N, the expected count for
  reads and writes drawn uniformly at random. A recall can only go through the memory where
  they meet, so at initialisation this is the signal that teaches the addressing: with
  separate key and query projections it falls as 1 / N (issue 18: large tables train
  slowly).
- `chunk_reuse`: how often the writes (and the reads) of one chunk of C tokens pick the
  same slot. The chunked kernels walk each slot's entries of a chunk (its *segment*) step
  by step, so their cost follows these lengths; uniformly random slots give almost none
  (mean segment about 1.06 at C = 16, N = 16,384, W = 64), a model's addressing at
  initialisation several times more (WORKSPACE.md, issue 11, session 26).
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
_QUERY_PROJECTION = "query_proj"


def _layer_name(block_name: str) -> str:
  return f"layer_{block_name.split('_')[1]}_M"


def _captures(*projections: str):
  """A `capture_intermediates` filter: the outputs of the `M` layers' `projections`."""
  def is_captured(module: nn.Module, method_name: str) -> bool:
    return (method_name == "__call__" and module.name in projections
            and isinstance(module.parent, SparseDeltaMemory))
  return is_captured


_ADDRESSING = {"writes": (_KEY_PROJECTION, "sdm_writes"),
               "reads": (_QUERY_PROJECTION, "sdm_reads")}


def _slot_ids_by_layer(model: LM, params: Any, tokens: jax.Array, kinds: tuple[str, ...]
                       ) -> dict[str, dict[str, jax.Array]]:
  """{"layer_<i>_M": {kind: slots [B, T, H, count]}} for kind in `kinds` ("writes": the
  key projection's top-W, "reads": the query projection's top-R), recomputed with the
  layer's own `addressing` from the projections captured in one forward pass. Traceable:
  call it inside jit."""
  config = model.config
  projections = tuple(_ADDRESSING[kind][0] for kind in kinds)
  _, captured = model.apply(params, tokens, capture_intermediates=_captures(*projections),
                            mutable=["intermediates"])
  result = {}
  for block_name, block in captured.get("intermediates", {}).items():
    result[_layer_name(block_name)] = {}
    for kind in kinds:
      projection, count_field = _ADDRESSING[kind]
      scores = block["mixer"][projection]["__call__"][0]
      batch, length, _ = scores.shape
      ids, _ = addressing(scores.reshape(batch, length, config.sdm_heads, -1),
                          getattr(config, count_field), config.sdm_topk_impl)
      result[_layer_name(block_name)][kind] = ids
  return result


def _check_inputs(inputs: np.ndarray, batch_size: int) -> np.ndarray:
  inputs = np.asarray(inputs)
  if inputs.ndim != 2 or inputs.shape[0] < 1:
    raise ValueError(f"inputs must be int32 [n, T] with n >= 1, got shape {inputs.shape}")
  if batch_size < 1:
    raise ValueError(f"batch_size must be >= 1, got {batch_size}")
  return inputs


def _marked_slots(model: LM):
  """jitted (params, tokens [B, T]) -> {layer: (slots written per sequence and head [B, H]
  int32, written by any sequence [H, N] bool)}."""
  config = model.config

  def marks(params, tokens):
    result = {}
    for layer, slots in _slot_ids_by_layer(model, params, tokens, ("writes",)).items():
      ids = slots["writes"]                                    # [B, T, H, W]
      ids = jnp.moveaxis(ids, 2, 1).reshape(ids.shape[0], config.sdm_heads, -1)
      written = jax.vmap(jax.vmap(
          lambda row: jnp.zeros(config.sdm_slots, bool).at[row].set(True)))(ids)
      result[layer] = (jnp.sum(written, axis=-1, dtype=jnp.int32), jnp.any(written, axis=0))
    return result
  return jax.jit(marks)


def written_slots(model: LM, params: Any, inputs: np.ndarray, *, batch_size: int
                  ) -> dict[str, dict[str, float]]:
  """Slots written by the model on `inputs` (int32 [n, T]), per `M` layer:

  {"layer_<i>_M": {"written_fraction": slots written by at least one token of at least
  one sequence / (H * N), "written_per_sequence_fraction": mean over sequences of the
  slots each writes / (H * N)}}; {} for a model without `M` layers.
  """
  inputs = _check_inputs(inputs, batch_size)
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


def _overlaps(model: LM):
  """jitted (params, tokens [B, T], read_positions, write_positions [B, P]) -> {layer:
  |J ∩ I| [B, P, H]} for the read slots J at the read positions and the written slots I
  at the write positions."""

  def overlaps(params, tokens, read_positions, write_positions):
    result = {}
    take = lambda x, at: jnp.take_along_axis(x, at[:, :, None, None], axis=1)  # noqa: E731
    for layer, slots in _slot_ids_by_layer(model, params, tokens, ("writes", "reads")).items():
      written = take(slots["writes"], write_positions)         # [B, P, H, W]
      read = take(slots["reads"], read_positions)              # [B, P, H, R]
      # Ids are distinct within a token's W (or R), so matching pairs count shared slots.
      result[layer] = jnp.sum(
          written[..., :, None] == read[..., None, :], axis=(-2, -1), dtype=jnp.int32)
    return result
  return jax.jit(overlaps)


def read_write_overlap(model: LM, params: Any, inputs: np.ndarray, read_positions: np.ndarray,
                       write_positions: np.ndarray, *, batch_size: int
                       ) -> dict[str, dict[str, float]]:
  """Slots shared by the reads at `read_positions` and the writes at `write_positions`
  (int32 [n, P] each, pairs of positions of `inputs` int32 [n, T]; e.g. MQAR's query and
  value positions, `sdm_jax.data.mqar.recall_positions`), per `M` layer:

  {"layer_<i>_M": {"overlap_slots": mean over examples, pairs and heads of |J ∩ I|,
  "chance_slots": W R / N}}; {} for a model without `M` layers.
  """
  inputs = _check_inputs(inputs, batch_size)
  read_positions, write_positions = np.asarray(read_positions), np.asarray(write_positions)
  if (read_positions.shape != write_positions.shape
      or read_positions.shape[:1] != inputs.shape[:1] or read_positions.ndim != 2):
    raise ValueError(f"read_positions and write_positions must both be [n, P] with n = "
                     f"{inputs.shape[0]}, got {read_positions.shape} and "
                     f"{write_positions.shape}")
  for name, positions in (("read_positions", read_positions),
                          ("write_positions", write_positions)):
    if positions.size and (positions.min() < 0 or positions.max() >= inputs.shape[1]):
      raise ValueError(f"{name} must lie in [0, T = {inputs.shape[1]}), got "
                       f"[{positions.min()}, {positions.max()}]")
  measure = _overlaps(model)
  counts: dict[str, list[np.ndarray]] = {}
  for start in range(0, inputs.shape[0], batch_size):
    part = slice(start, start + batch_size)
    for layer, overlap in measure(params, jnp.asarray(inputs[part]),
                                  jnp.asarray(read_positions[part], jnp.int32),
                                  jnp.asarray(write_positions[part], jnp.int32)).items():
      counts.setdefault(layer, []).append(np.asarray(overlap))
  config = model.config
  chance = config.sdm_writes * config.sdm_reads / config.sdm_slots
  return {layer: {"overlap_slots": float(np.concatenate(parts).mean()),
                  "chance_slots": chance}
          for layer, parts in counts.items()}


def segment_lengths(ids: np.ndarray, chunk_size: int) -> dict[str, float]:
  """Slot reuse within chunks of ids [B, T, H, K] (K slots per token, distinct within a
  token); T is cut to whole chunks. Per (sequence, head, chunk), the entries of one slot
  form a segment. Returns {"unique_fraction": distinct slots / entries, "mean_segment":
  mean over entries of their segment's length (1 without reuse), "max_segment": mean over
  chunks of their longest segment}."""
  ids = np.asarray(ids)
  batch, length, heads, count = ids.shape
  chunks = length // chunk_size
  if chunks < 1:
    raise ValueError(f"chunk_size ({chunk_size}) must not exceed T ({length})")
  per_chunk = np.moveaxis(ids[:, :chunks * chunk_size], 2, 1).reshape(-1, chunk_size * count)
  unique, weighted, longest = 0, 0, []
  for entries in per_chunk:
    _, counts = np.unique(entries, return_counts=True)
    unique += counts.size
    weighted += int((counts ** 2).sum())
    longest.append(counts.max())
  return {"unique_fraction": unique / per_chunk.size,
          "mean_segment": weighted / per_chunk.size,
          "max_segment": float(np.mean(longest))}


def chunk_reuse(model: LM, params: Any, inputs: np.ndarray, *, chunk_size: int,
                batch_size: int) -> dict[str, dict[str, dict[str, float]]]:
  """`segment_lengths` of each `M` layer's writes and reads on `inputs` (int32 [n, T]):
  {"layer_<i>_M": {"writes": {...}, "reads": {...}}}; {} for a model without `M` layers."""
  inputs = _check_inputs(inputs, batch_size)
  slot_ids = jax.jit(lambda params, tokens: _slot_ids_by_layer(model, params, tokens,
                                                               ("writes", "reads")))
  ids: dict[str, dict[str, list[np.ndarray]]] = {}
  for start in range(0, inputs.shape[0], batch_size):
    for layer, slots in slot_ids(params, jnp.asarray(inputs[start:start + batch_size])).items():
      for kind, part in slots.items():
        ids.setdefault(layer, {}).setdefault(kind, []).append(np.asarray(part))
  return {layer: {kind: segment_lengths(np.concatenate(parts), chunk_size)
                  for kind, parts in kinds.items()}
          for layer, kinds in ids.items()}
