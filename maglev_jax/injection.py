"""Recurrent K/V injection: the memory m_{j-1} enters the keys and values of position j.

Per layer l, with a_j the layer's normed input and k_j, v_j its rotated local keys/values:
  k_rec = rotary(RMSNorm(Wk_rec m_{j-1}), j),   v_rec = Wv_rec m_{j-1},
  g_loc = 2 sigmoid(G_loc a_j),   g_rec = 2 sigmoid(G_rec a_j)   (one gate per head),
  k_bar = g_loc * k + g_rec * k_rec,   v_bar = g_loc * v + g_rec * v_rec.
G_loc and G_rec start at zero, so both gates start at 1.
"""

from __future__ import annotations

from typing import Any

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp

from sdm_jax.layers.norms import RMSNorm
from sdm_jax.layers.rotary import apply_rotary


def mix_local_and_recurrent(local: jax.Array, recurrent: jax.Array,
                            local_gate_logits: jax.Array,
                            recurrent_gate_logits: jax.Array) -> jax.Array:
  """`2 sigmoid(gl) * local + 2 sigmoid(gr) * recurrent`.

  local, recurrent: [B, T, H, D]; gate logits: [B, T, H] -> [B, T, H, D] in local.dtype
  (gates and sum in float32).
  """
  chex.assert_equal_shape([local, recurrent])
  chex.assert_equal_shape([local_gate_logits, recurrent_gate_logits])
  gate = lambda logits: 2.0 * jax.nn.sigmoid(logits.astype(jnp.float32))[..., None]  # noqa: E731
  mixed = (gate(local_gate_logits) * local.astype(jnp.float32)
           + gate(recurrent_gate_logits) * recurrent.astype(jnp.float32))
  return mixed.astype(local.dtype)


class MemoryInjection(nn.Module):
  """The injection weights of one decoder layer; called as its attention's `kv_hook`.

  Attributes:
    num_heads, head_dim: H and D of the attention it feeds.
    rope_base: the attention's rotary base (k_rec is rotated like k).
  """

  num_heads: int
  head_dim: int
  rope_base: float = 10_000.0
  dtype: Any = jnp.float32
  param_dtype: Any = jnp.float32

  @nn.compact
  def __call__(self, x: jax.Array, k: jax.Array, v: jax.Array, positions: jax.Array, *,
               memory_prev: jax.Array) -> tuple[jax.Array, jax.Array]:
    """x (a_j) [B, T, d], k, v [B, T, H, D], positions [B, T], memory_prev [B, T, d_m]
    (m_{j-1} at position j) -> (k_bar, v_bar) [B, T, H, D]."""
    chex.assert_rank([x, memory_prev], 3)
    chex.assert_equal_shape_prefix([x, k, v, memory_prev], 2)
    heads = (*memory_prev.shape[:2], self.num_heads, self.head_dim)
    dense = lambda features, name, init=nn.initializers.lecun_normal(): nn.Dense(  # noqa: E731
        features, use_bias=False, kernel_init=init, dtype=self.dtype,
        param_dtype=self.param_dtype, name=name)
    inner = self.num_heads * self.head_dim
    k_rec = RMSNorm(param_dtype=self.param_dtype, name="k_rec_norm")(
        dense(inner, "k_rec_proj")(memory_prev).reshape(heads))
    k_rec = apply_rotary(k_rec, positions, self.rope_base)
    v_rec = dense(inner, "v_rec_proj")(memory_prev).reshape(heads)
    zeros = nn.initializers.zeros
    local_gate = dense(self.num_heads, "local_gate", zeros)(x)
    recurrent_gate = dense(self.num_heads, "recurrent_gate", zeros)(x)
    return (mix_local_and_recurrent(k, k_rec, local_gate, recurrent_gate),
            mix_local_and_recurrent(v, v_rec, local_gate, recurrent_gate))
