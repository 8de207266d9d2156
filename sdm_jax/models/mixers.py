"""The registry of mixer letters: the one place a new layer kind is added.

Each entry builds the Flax module of one layer from the `LMConfig` and counts its FLOPs
(decode-state sizes are read off the caches themselves, see `sdm_jax.models.describe`). Every mixer module implements
  `__call__(x, positions) -> y`                     (parallel training pass),
  `prefill(x, positions, cache_len) -> (y, cache)`  (parallel pass + decode cache),
  `decode(x, positions, cache) -> (y, cache)`       (one token, x [B, 1, d]).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import flax.linen as nn
import jax.numpy as jnp

from sdm_jax.layers.attention import Attention
from sdm_jax.layers.gated_deltanet import GatedDeltaNet
from sdm_jax.layers.sparse_delta_memory import SparseDeltaMemory, sub_keys_per_head


@dataclasses.dataclass(frozen=True)
class MixerSpec:
  """How to build one layer kind and account for it.

  Attributes:
    description: a few words for errors and `describe`.
    build: (config, name) -> the Flax module.
    flops_per_token: (config, context_len) -> forward FLOPs per token of the mixer,
      projections included (2 per multiply-add), averaged over a context of that length.
  """

  description: str
  build: Callable[[Any, str], nn.Module]
  flops_per_token: Callable[[Any, int], float]


def _dtype(name: str):
  return jnp.dtype(name)


def _attention(window_of: Callable[[Any], int | None]) -> Callable[[Any, str], nn.Module]:
  def build(config, name: str) -> nn.Module:
    return Attention(
        model_dim=config.d_model, num_heads=config.num_heads,
        head_dim=config.resolved_head_dim, window=window_of(config), qk_norm=config.qk_norm,
        rope_base=config.rope_base, decode_impl=config.attention_decode_impl,
        dtype=_dtype(config.compute_dtype),
        param_dtype=_dtype(config.param_dtype), name=name)
  return build


def _attention_flops(window_of):
  def flops(config, context_len: int) -> float:
    inner = config.num_heads * config.resolved_head_dim
    projections = 2 * 4 * config.d_model * inner
    window = window_of(config)
    # Mean number of visible keys over positions 1..context_len.
    if window is None:
      mean_keys = (context_len + 1) / 2
    else:
      w = min(window, context_len)
      mean_keys = (w * (w + 1) / 2 + (context_len - w) * w) / context_len
    return projections + 2 * 2 * inner * mean_keys
  return flops


def _build_gdn(config, name: str) -> nn.Module:
  return GatedDeltaNet(
      model_dim=config.d_model, num_heads=config.resolved_gdn_heads,
      head_dim=config.resolved_gdn_head_dim, expand_v=config.gdn_expand_v,
      conv_kernel=config.conv_kernel, chunk_size=config.gdn_chunk_size, impl=config.gdn_impl,
      dtype=_dtype(config.compute_dtype), param_dtype=_dtype(config.param_dtype), name=name)


def _gdn_flops(config, context_len: int) -> float:
  """Projections (q, k, v, gate, a, b, out), short convs, and the recurrence per token:
  k^T S, the rank-one update and S^T q, each 2 K V per head."""
  del context_len  # constant per token
  heads, key = config.resolved_gdn_heads, config.resolved_gdn_head_dim
  value = int(config.gdn_expand_v * key)
  widths = 2 * heads * key + 2 * heads * value + 2 * heads
  projections = 2 * config.d_model * widths + 2 * heads * value * config.d_model
  convs = 2 * config.conv_kernel * heads * (2 * key + value)
  recurrence = 3 * 2 * heads * key * value
  return projections + convs + recurrence


def _build_sdm(config, name: str) -> nn.Module:
  return SparseDeltaMemory(
      model_dim=config.d_model, num_heads=config.sdm_heads, num_slots=config.sdm_slots,
      num_writes=config.sdm_writes, num_reads=config.sdm_reads, error=config.sdm_error,
      learn_m0=config.sdm_learn_m0, chunk_size=config.sdm_chunk_size, impl=config.sdm_impl,
      topk_impl=config.sdm_topk_impl, memory_dtype=config.sdm_memory_dtype,
      balance_loss=config.sdm_balance_weight > 0,
      tied_addressing_init=config.sdm_tied_addressing_init, dtype=_dtype(config.compute_dtype),
      param_dtype=_dtype(config.param_dtype), name=name)


def _sdm_flops(config, context_len: int) -> float:
  """Projections (write and read scores, v, gate, a, b, out), the product-key pair sums, and
  the memory op per token, counted as GDN's recurrence: the retrieval k^T M[I], the W-row
  update and the read q^T M[J], 2 W Dv + 2 W Dv + 2 R Dv per head; independent of N."""
  del context_len  # constant per token
  d, heads = config.d_model, config.sdm_heads
  sub_keys = sub_keys_per_head(config.sdm_slots)
  score_width = heads * 2 * sub_keys
  projections = 2 * d * (2 * score_width + 2 * d + 2 * heads) + 2 * d * d
  pair_sums = heads * sum(min(k, sub_keys) ** 2 for k in (config.sdm_writes, config.sdm_reads))
  memory_op = 2 * heads * (2 * config.sdm_writes + config.sdm_reads) * (d // heads)
  return projections + pair_sums + memory_op


_FULL = lambda config: None  # noqa: E731
_WINDOW = lambda config: config.window  # noqa: E731

MIXERS: dict[str, MixerSpec] = {
    "A": MixerSpec("full causal attention", _attention(_FULL), _attention_flops(_FULL)),
    "S": MixerSpec("sliding-window attention", _attention(_WINDOW), _attention_flops(_WINDOW)),
    "G": MixerSpec("Gated DeltaNet", _build_gdn, _gdn_flops),
    "M": MixerSpec("Sparse Delta Memory", _build_sdm, _sdm_flops),
}
