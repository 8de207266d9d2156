"""Shape and dtype checks at the gated delta rule's API boundary (ValueError naming the field)."""

from __future__ import annotations

import chex


def _expect(name: str, x, shape: tuple[int, ...], layout: str) -> None:
  try:
    chex.assert_shape(x, shape)
    chex.assert_type(x, float)
  except AssertionError as e:
    raise ValueError(
        f"{name} must be a floating array of shape {layout} = {shape}, "
        f"got shape {getattr(x, 'shape', None)} dtype {getattr(x, 'dtype', None)}") from e


def check_sequence_inputs(q, k, v, g, beta, initial_state) -> None:
  """q, k [B, T, H, K], v [B, T, H, V], g, beta [B, T, H], initial_state [B, H, K, V] or None."""
  if getattr(q, "ndim", None) != 4:
    raise ValueError(f"q must have shape [B, T, H, K], got {getattr(q, 'shape', None)}")
  if getattr(v, "ndim", None) != 4:
    raise ValueError(f"v must have shape [B, T, H, V], got {getattr(v, 'shape', None)}")
  batch, seq_len, heads, key_dim = q.shape
  value_dim = v.shape[-1]
  _expect("q", q, (batch, seq_len, heads, key_dim), "[B, T, H, K]")
  _expect("k", k, (batch, seq_len, heads, key_dim), "[B, T, H, K] (as q)")
  _expect("v", v, (batch, seq_len, heads, value_dim), "[B, T, H, V] (B, T, H as q)")
  _expect("g", g, (batch, seq_len, heads), "[B, T, H]")
  _expect("beta", beta, (batch, seq_len, heads), "[B, T, H]")
  if initial_state is not None:
    _expect("initial_state", initial_state, (batch, heads, key_dim, value_dim), "[B, H, K, V]")


def check_step_inputs(q, k, v, g, beta, state) -> None:
  """q, k [B, H, K], v [B, H, V], g, beta [B, H], state [B, H, K, V]."""
  if getattr(q, "ndim", None) != 3:
    raise ValueError(f"q must have shape [B, H, K], got {getattr(q, 'shape', None)}")
  if getattr(v, "ndim", None) != 3:
    raise ValueError(f"v must have shape [B, H, V], got {getattr(v, 'shape', None)}")
  batch, heads, key_dim = q.shape
  value_dim = v.shape[-1]
  _expect("q", q, (batch, heads, key_dim), "[B, H, K]")
  _expect("k", k, (batch, heads, key_dim), "[B, H, K] (as q)")
  _expect("v", v, (batch, heads, value_dim), "[B, H, V] (B, H as q)")
  _expect("g", g, (batch, heads), "[B, H]")
  _expect("beta", beta, (batch, heads), "[B, H]")
  _expect("state", state, (batch, heads, key_dim, value_dim), "[B, H, K, V]")
