"""How evenly product-key selections spread over the sub-keys: a load-balancing loss.

Runs of the recall study whose tables never trained wrote a few hundred distinct slots per
sequence where the ones that trained wrote 700 or more (WORKSPACE.md, "Recall against
state size", session 18): their addressing collapsed. The remedy mixture-of-experts
routers use (Switch Transformer's auxiliary loss) applies per half of the product keys,
whose S sub-keys play the experts:

  P_h[i] = mean over tokens of softmax(scores_h)[i],
  f_h[i] = fraction of the tokens' k picks whose half-h sub-key is i  (no gradient),
  balance = mean over heads and halves of S * sum_i f_h[i] P_h[i].

It is 1 when picks and probabilities are uniform over the sub-keys and approaches S when
every token picks the same sub-key with certainty; its gradient lowers the probability of
the sub-keys picked most.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp


def product_key_balance(scores: jax.Array, idx: jax.Array) -> jax.Array:
  """The balance above (a float32 scalar) of one set of product-key selections.

  Args:
    scores: [..., H, 2S] sub-key scores, the first half's S then the second's.
    idx: [..., H, k] the selected slot ids i1 * S + i2 (`product_key_topk`).
  """
  chex.assert_equal_shape_prefix((scores, idx), scores.ndim - 1)
  sub_keys = scores.shape[-1] // 2
  heads, picks = scores.shape[-2], idx.shape[-1]
  halves = scores.astype(jnp.float32).reshape(-1, heads, 2, sub_keys)
  probability = jnp.mean(jax.nn.softmax(halves, axis=-1), axis=0)          # [H, 2, S]
  idx = idx.reshape(-1, heads, picks)
  sub_key = jnp.stack([idx // sub_keys, idx % sub_keys], axis=-2)         # [rows, H, 2, k]
  head = jnp.arange(heads)[None, :, None, None]
  half = jnp.arange(2)[None, None, :, None]
  counts = jnp.zeros((heads, 2, sub_keys), jnp.float32).at[head, half, sub_key].add(1.0)
  fraction = jax.lax.stop_gradient(counts / (idx.shape[0] * picks))       # [H, 2, S]
  return jnp.mean(sub_keys * jnp.sum(fraction * probability, axis=-1))
