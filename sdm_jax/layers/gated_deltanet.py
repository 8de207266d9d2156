"""The Gated DeltaNet mixer `G` (Yang et al., arXiv 2412.06464), DESIGN.md section 4.

  q, k, v = SiLU(ShortConv(W_q x)), SiLU(ShortConv(W_k x)), SiLU(ShortConv(W_v x))
  q, k    = L2-normalised per head
  g, beta = DeltaGates(x)
  o       = gated_delta_rule(q, k, v, g, beta)          (S_t = (I - b k k^T) e^g S + b k v^T)
  y       = W_o (RMSNorm(o) * SiLU(W_gate x))            (per-head gated RMSNorm)

Decode cache: the [H, K, V] float32 state and the last (kernel - 1) pre-convolution inputs
of q, k and v: constant size at any context length.

On a training mesh with a "model" axis that divides H (`sdm_jax.sharding`) the op runs on
head slices; with one that does not, every device of a model group runs all heads.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp

from sdm_jax import sharding
from sdm_jax.layers.decode_rows import pad_rows
from sdm_jax.layers.gates import DeltaGates
from sdm_jax.layers.recurrent_mixer import RecurrentMixer
from sdm_jax.layers.norms import RMSNorm
from sdm_jax.layers.short_conv import ShortConv
from sdm_jax.ops.gated_delta import gated_delta_rule, gated_delta_step



class GatedDeltaNetCache(NamedTuple):
  """Decode cache of `G`, constant size at any context length.

  state: [B, H, K, V] float32 recurrent state after the last token.
  conv_q, conv_k: [B, kernel - 1, H * K], conv_v: [B, kernel - 1, H * V]: the last
    pre-convolution projections (the short convolutions' tails).
  """
  state: jax.Array
  conv_q: jax.Array
  conv_k: jax.Array
  conv_v: jax.Array


def l2_normalize(x: jax.Array, eps: float = 1e-6) -> jax.Array:
  """x / ||x|| over the last axis, computed in float32, returned in x.dtype."""
  x32 = x.astype(jnp.float32)
  return (x32 * jax.lax.rsqrt(jnp.sum(jnp.square(x32), -1, keepdims=True) + eps)).astype(x.dtype)


class GatedDeltaNet(RecurrentMixer):
  """Gated DeltaNet mixer; methods `__call__`, `prefill`, `decode` as every mixer.

  Attributes:
    model_dim: d.
    num_heads: H.
    head_dim: K, the key/query dim per head.
    expand_v: V = expand_v * K, the value dim per head.
    conv_kernel: taps of the short convolutions.
    chunk_size, impl: passed to `gated_delta_rule`.
  """

  model_dim: int
  num_heads: int
  head_dim: int
  expand_v: float = 1.0
  conv_kernel: int = 4
  chunk_size: int = 64
  impl: str = "auto"
  dtype: Any = jnp.float32
  param_dtype: Any = jnp.float32

  @property
  def value_dim(self) -> int:
    return int(self.expand_v * self.head_dim)

  def setup(self):
    dense = lambda features, name: nn.Dense(  # noqa: E731
        features, use_bias=False, dtype=self.dtype, param_dtype=self.param_dtype, name=name)
    key_width = self.num_heads * self.head_dim
    value_width = self.num_heads * self.value_dim
    self.q_proj = dense(key_width, "q_proj")
    self.k_proj = dense(key_width, "k_proj")
    self.v_proj = dense(value_width, "v_proj")
    self.gate_proj = dense(value_width, "gate_proj")
    self.o_proj = dense(self.model_dim, "o_proj")
    self.q_conv = ShortConv(self.conv_kernel, param_dtype=self.param_dtype)
    self.k_conv = ShortConv(self.conv_kernel, param_dtype=self.param_dtype)
    self.v_conv = ShortConv(self.conv_kernel, param_dtype=self.param_dtype)
    self.gates = DeltaGates(self.num_heads, dtype=self.dtype, param_dtype=self.param_dtype)
    self.out_norm = RMSNorm(param_dtype=self.param_dtype)

  def _inputs(self, x: jax.Array, cache: GatedDeltaNetCache | None):
    """Projections, short convolutions, normalisation and gates; returns the op inputs and
    the new convolution tails."""
    batch, length, _ = x.shape
    tails = {}
    projected = {}
    for name, proj, conv, dim in (("q", self.q_proj, self.q_conv, self.head_dim),
                                  ("k", self.k_proj, self.k_conv, self.head_dim),
                                  ("v", self.v_proj, self.v_conv, self.value_dim)):
      tail = None if cache is None else getattr(cache, f"conv_{name}")
      y, tails[f"conv_{name}"] = conv(proj(x), tail)
      projected[name] = jax.nn.silu(y).reshape(batch, length, self.num_heads, dim)
    q, k = l2_normalize(projected["q"]), l2_normalize(projected["k"])
    g, beta = self.gates(x)
    return q, k, projected["v"], g, beta, tails

  def _output(self, x: jax.Array, o: jax.Array) -> jax.Array:
    batch, length = x.shape[:2]
    gate = jax.nn.silu(self.gate_proj(x)).reshape(batch, length, self.num_heads, self.value_dim)
    o = self.out_norm(o.astype(gate.dtype)) * gate
    return self.o_proj(o.reshape(batch, length, self.num_heads * self.value_dim))

  def _run(self, x: jax.Array):
    """The parallel pass; the cache holds the final state and the conv tails."""
    q, k, v, g, beta, tails = self._inputs(x, None)
    heads = sharding.MODEL if self.num_heads % sharding.model_parallelism() == 0 else None
    tokens = (sharding.BATCH, None, heads)  # q, k, v, g, beta and o: [B, T, H, ...]
    op = functools.partial(gated_delta_rule, chunk_size=self.chunk_size, impl=self.impl)
    o, state = sharding.over_mesh(op, in_layouts=(tokens,) * 5,
                                  out_layouts=(tokens, (sharding.BATCH, heads)),
                                  model_dims="GDN's heads")(q, k, v, g, beta)
    return self._output(x, o), GatedDeltaNetCache(state=state, **tails)

  def decode(self, x: jax.Array, positions: jax.Array, cache: GatedDeltaNetCache):
    """One token per sequence (x [B, 1, d]) -> (y, cache)."""
    del positions
    batch = x.shape[0]
    # Batch 1: the projections (and the convolutions' tails with them) on two rows, GEMMs
    # rather than reductions (decode_rows); the state is never padded.
    padded = pad_rows(x)
    tails_cache = cache._replace(conv_q=pad_rows(cache.conv_q), conv_k=pad_rows(cache.conv_k),
                                 conv_v=pad_rows(cache.conv_v))
    q, k, v, g, beta, tails = self._inputs(padded, tails_cache)
    o, state = gated_delta_step(q[:batch, 0], k[:batch, 0], v[:batch, 0], g[:batch, 0],
                                beta[:batch, 0], cache.state)
    y = self._output(padded, pad_rows(o[:, None]))[:batch]
    return y, GatedDeltaNetCache(state=state, **{name: tail[:batch]
                                                 for name, tail in tails.items()})
