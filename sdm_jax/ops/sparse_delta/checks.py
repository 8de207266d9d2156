"""Input validation and dtype handling shared by every sparse delta rule implementation.

Invalid input raises a ValueError naming the field and what is allowed. Valid input comes
back canonical: ids int32, every token float in the accumulation dtype (float32, or float64
when an input is float64), the table in its storage dtype (`storage_dtype`), broadcast to
one copy per sequence [B, H, N, Dv] unless asked not to.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sdm_jax.ops.precision import accumulation_dtype

ERROR_FORMS = ("shared", "per_slot")


class SparseDeltaInputs(NamedTuple):
  """Canonical inputs. Token axes `tok` are (B, T, H) for a sequence, (B, H) for one step."""
  memory: jax.Array     # [B, H, N, Dv]
  write_idx: jax.Array  # [*tok, W] int32
  write_w: jax.Array    # [*tok, W]
  v: jax.Array          # [*tok, Dv]
  beta: jax.Array       # [*tok]
  g: jax.Array          # [*tok]
  read_idx: jax.Array   # [*tok, R] int32
  read_w: jax.Array     # [*tok, R]


def check_error_form(error: str) -> None:
  if error not in ERROR_FORMS:
    raise ValueError(f"error must be one of {ERROR_FORMS}, got {error!r}")


def check_chunk_size(chunk_size: int) -> None:
  if not isinstance(chunk_size, int) or isinstance(chunk_size, bool) or chunk_size < 1:
    raise ValueError(f"chunk_size must be a positive int, got {chunk_size!r}")


def storage_dtype(memory_dtype, accumulation) -> np.dtype:
  """The table's dtype in memory: bfloat16 tables stay bfloat16 (rows are widened for the
  math and rounded once when stored); anything else is stored in the accumulation dtype,
  and float64 inputs make every table float64."""
  if np.dtype(accumulation) != np.float64 and np.dtype(memory_dtype) == jnp.bfloat16:
    return np.dtype(jnp.bfloat16)
  return np.dtype(accumulation)


def canonicalize_inputs(memory, write_idx, write_w, v, beta, g, read_idx, read_w, *,
                        time_axis: bool, broadcast_memory: bool = True
                        ) -> tuple[SparseDeltaInputs, np.dtype]:
  """Validates shapes and dtypes; returns canonical inputs and the accumulation dtype.

  With `time_axis`, token arrays are [B, T, H, ...]; without, [B, H, ...] (one step).
  `memory` is [B, H, N, Dv] (one table per sequence) or [H, N, Dv] (shared), returned in
  `storage_dtype` and, with `broadcast_memory`, as [B, H, N, Dv].
  """
  named = dict(memory=memory, write_idx=write_idx, write_w=write_w, v=v, beta=beta, g=g,
               read_idx=read_idx, read_w=read_w)
  for name, value in named.items():
    if not hasattr(value, "shape") or not hasattr(value, "dtype"):
      raise ValueError(f"{name} must be an array, got {type(value).__name__}")
  for name in ("write_idx", "read_idx"):
    if not jnp.issubdtype(named[name].dtype, jnp.integer):
      raise ValueError(f"{name} must have an integer dtype (slot ids), got {named[name].dtype}")
  for name in ("memory", "write_w", "v", "beta", "g", "read_w"):
    if not jnp.issubdtype(named[name].dtype, jnp.floating):
      raise ValueError(f"{name} must have a floating dtype, got {named[name].dtype}")

  token_rank = 3 if time_axis else 2
  token_axes = "[B, T, H" if time_axis else "[B, H"
  if write_idx.ndim != token_rank + 1:
    raise ValueError(f"write_idx must be {token_axes}, W], got shape {write_idx.shape}")
  tok = tuple(write_idx.shape[:-1])
  num_writes = write_idx.shape[-1]
  if read_idx.ndim != token_rank + 1 or tuple(read_idx.shape[:-1]) != tok:
    raise ValueError(
        f"read_idx must be {token_axes}, R] with {token_axes}] = {tok} as in write_idx, got "
        f"shape {read_idx.shape}")
  num_reads = read_idx.shape[-1]
  if write_w.shape != write_idx.shape:
    raise ValueError(f"write_w must have write_idx's shape {write_idx.shape}, got {write_w.shape}")
  if read_w.shape != read_idx.shape:
    raise ValueError(f"read_w must have read_idx's shape {read_idx.shape}, got {read_w.shape}")
  for name in ("beta", "g"):
    if tuple(named[name].shape) != tok:
      raise ValueError(f"{name} must be {token_axes}] = {tok}, got shape {named[name].shape}")
  if v.ndim != token_rank + 1 or tuple(v.shape[:-1]) != tok:
    raise ValueError(f"v must be {token_axes}, Dv] with {token_axes}] = {tok}, got {v.shape}")
  if num_writes < 1 or num_reads < 1:
    raise ValueError(f"need W >= 1 writes and R >= 1 reads per token, got W={num_writes}, "
                     f"R={num_reads}")

  batch, heads, value_dim = tok[0], tok[-1], v.shape[-1]
  if memory.ndim not in (3, 4):
    raise ValueError(f"memory must be [B, H, N, Dv] or [H, N, Dv], got shape {memory.shape}")
  num_slots = memory.shape[-2]
  expected = (heads, num_slots, value_dim)
  if tuple(memory.shape[-3:]) != expected or (memory.ndim == 4 and memory.shape[0] != batch):
    want = f"[B, H, N, Dv] = [{batch}, {heads}, N, {value_dim}] or [H, N, Dv]"
    raise ValueError(f"memory must be {want} (H and Dv from v), got shape {memory.shape}")
  if num_writes > num_slots:
    raise ValueError(
        f"W = {num_writes} writes per token exceed N = {num_slots} slots; the ids written by "
        "one token must be distinct")

  dtype = accumulation_dtype(memory, write_w, v, beta, g, read_w)
  memory = memory.astype(storage_dtype(memory.dtype, dtype))
  if broadcast_memory:
    memory = jnp.broadcast_to(memory, (batch, heads, num_slots, value_dim))
  canonical = SparseDeltaInputs(
      memory=memory,
      write_idx=write_idx.astype(jnp.int32),
      write_w=write_w.astype(dtype),
      v=v.astype(dtype),
      beta=beta.astype(dtype),
      g=g.astype(dtype),
      read_idx=read_idx.astype(jnp.int32),
      read_w=read_w.astype(dtype),
  )
  return canonical, dtype
