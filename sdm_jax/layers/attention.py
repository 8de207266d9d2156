"""Full causal (`A`) and sliding-window (`S`) softmax attention, with decode caches.

Pure functions carry the math; `Attention` holds the projections around them.

Window convention: a window of `w` keys lets the query at position p see keys at
positions p - w + 1 .. p (itself and the w - 1 before it).

On a training mesh with a "model" axis that divides H (`sdm_jax.sharding`) the parallel
pass attends on head slices; with one that does not, every device of a model group runs
all heads. Decoding is not split.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp

from pallas_kernels import platform
from pallas_kernels.attention.decode_xla import attention_mask
from sdm_jax import sharding
from sdm_jax.layers.decode_rows import pad_rows
from sdm_jax.layers.norms import RMSNorm
from sdm_jax.layers.rotary import apply_rotary, inverse_frequencies
from sdm_jax.ops import decode_attention


class AttentionCache(NamedTuple):
  """Decode cache of `A` / `S`: a ring buffer of `cache_len` slots (the context for `A`,
  the window for `S`); token at position p sits in slot p % cache_len.

  k, v: [B, cache_len, H, D] rotated keys and values (after any kv_hook).
  positions: [B, cache_len] int32 position held by each slot, -1 for empty.
  """
  k: jax.Array
  v: jax.Array
  positions: jax.Array


# kv_hook(x, k, v, positions) -> (k, v): rewrites the rotated keys and values of every token
# before attention and before they enter a cache (Maglev injects its recurrent memory so).
KVHook = Callable[[jax.Array, jax.Array, jax.Array, jax.Array], tuple[jax.Array, jax.Array]]


def masked_attention(q: jax.Array, k: jax.Array, v: jax.Array, q_positions: jax.Array,
                     k_positions: jax.Array, *, window: int | None = None,
                     scale: float | None = None) -> jax.Array:
  """Softmax attention with the mask built from explicit positions (the readable reference).

  `o[b, t, h] = softmax_s(scale * q[b, t, h] . k[b, s, h] | visible) @ v[b, :, h]`.

  Args:
    q: [B, Tq, H, D]; k, v: [B, Tk, H, D].
    q_positions: [B, Tq]; k_positions: [B, Tk] (negative = empty slot).
    window: keys per query, or None for full causal attention.
    scale: defaults to D ** -0.5.

  Returns:
    [B, Tq, H, D] in q.dtype; scores and softmax in float32, the weighted sum of v in v's
    dtype with float32 accumulation.
  """
  chex.assert_rank([q, k, v], 4)
  chex.assert_equal_shape([k, v])
  scale = q.shape[-1] ** -0.5 if scale is None else scale
  scores = jnp.einsum("bqhd,bkhd->bhqk", q, k, preferred_element_type=jnp.float32) * scale
  mask = attention_mask(q_positions, k_positions, window)[:, None]
  scores = jnp.where(mask, scores, -jnp.inf)
  # A query with no visible key (cannot happen for valid positions) would give NaN; keep 0.
  weights = jnp.nan_to_num(jax.nn.softmax(scores, axis=-1))
  # The weights meet v in v's dtype, accumulated in float32 (as flash attention does):
  # widening v instead would copy the whole value cache to float32 at every decode step.
  out = jnp.einsum("bhqk,bkhd->bqhd", weights.astype(v.dtype), v,
                   preferred_element_type=jnp.float32)
  return out.astype(q.dtype)


def default_implementation(dtype: jnp.dtype) -> str:
  """cuDNN flash attention on GPU for half-precision inputs, XLA otherwise."""
  on_gpu = platform.on_gpu()
  return "cudnn" if on_gpu and jnp.dtype(dtype) in (jnp.bfloat16, jnp.float16) else "xla"


def causal_attention(q: jax.Array, k: jax.Array, v: jax.Array, *, window: int | None = None,
                     implementation: str | None = None) -> jax.Array:
  """Causal (optionally sliding-window) attention over one sequence starting at position 0.

  q, k, v: [B, T, H, D] -> [B, T, H, D]; equals `masked_attention` with positions 0..T-1.
  `implementation`: "cudnn" (flash attention through `jax.nn.dot_product_attention`; GPU,
  bf16/fp16) or "xla" (`masked_attention`, which XLA on CPU runs faster than
  `dot_product_attention`'s own XLA path); None picks by platform and dtype.
  """
  chex.assert_rank([q, k, v], 4)
  if window is not None and window < 1:
    raise ValueError(f"window must be >= 1 or None, got {window}")
  implementation = implementation or default_implementation(q.dtype)
  if implementation == "xla":
    positions = jnp.broadcast_to(jnp.arange(q.shape[1], dtype=jnp.int32), q.shape[:2])
    return masked_attention(q, k, v, positions, positions, window=window)
  if implementation != "cudnn":
    raise ValueError(f"implementation must be 'cudnn', 'xla' or None, got {implementation!r}")
  local_window = None if window is None else (window - 1, 0)
  return jax.nn.dot_product_attention(
      q, k, v, is_causal=True, local_window_size=local_window, implementation="cudnn")


def init_attention_cache(batch_size: int, cache_len: int, num_heads: int, head_dim: int,
                         dtype: Any) -> AttentionCache:
  """An empty cache of `cache_len` slots: the context for `A`, the window for `S`."""
  return AttentionCache(
      k=jnp.zeros((batch_size, cache_len, num_heads, head_dim), dtype),
      v=jnp.zeros((batch_size, cache_len, num_heads, head_dim), dtype),
      positions=jnp.full((batch_size, cache_len), -1, jnp.int32),
  )


def write_cache(cache: AttentionCache, k: jax.Array, v: jax.Array,
                positions: jax.Array) -> AttentionCache:
  """Stores k, v [B, T, H, D] at slot `position % cache_len` (a ring buffer).

  Only the last `cache_len` tokens are written: earlier ones would be overwritten anyway.
  """
  cache_len = cache.k.shape[1]
  k, v, positions = k[:, -cache_len:], v[:, -cache_len:], positions[:, -cache_len:]
  slots = positions % cache_len
  batch = jnp.arange(k.shape[0])[:, None]
  return AttentionCache(
      k=cache.k.at[batch, slots].set(k.astype(cache.k.dtype)),
      v=cache.v.at[batch, slots].set(v.astype(cache.v.dtype)),
      positions=cache.positions.at[batch, slots].set(positions.astype(jnp.int32)),
  )


class Attention(nn.Module):
  """Multi-head attention with rotary embeddings and QK-norm, full or sliding-window.

  Methods share the parameters: `__call__` (parallel training pass), `prefill` (parallel
  pass that also returns the decode cache) and `decode` (tokens appended to a cache). Each
  takes an optional `kv_hook` (see `KVHook`) applied to the keys and values after rotary.

  Attributes:
    model_dim: d, the width of the input and output.
    num_heads: H.
    head_dim: D per head.
    window: keys per query (`S`), or None for full causal attention (`A`).
    qk_norm: RMS-normalise q and k per head before rotary.
    rope_base: rotary wavelength base.
    decode_impl: how `decode` attends over the cache (`decode_attention.IMPLS`: "auto",
      "xla", "pallas", "pallas_gpu").
  """

  model_dim: int
  num_heads: int
  head_dim: int
  window: int | None = None
  qk_norm: bool = True
  rope_base: float = 10_000.0
  decode_impl: str = "auto"
  dtype: Any = jnp.float32
  param_dtype: Any = jnp.float32

  def setup(self):
    dense = lambda features, name: nn.Dense(  # noqa: E731
        features, use_bias=False, dtype=self.dtype, param_dtype=self.param_dtype, name=name)
    inner = self.num_heads * self.head_dim
    self.q_proj = dense(inner, "q_proj")
    self.k_proj = dense(inner, "k_proj")
    self.v_proj = dense(inner, "v_proj")
    self.o_proj = dense(self.model_dim, "o_proj")
    if self.qk_norm:
      self.q_norm = RMSNorm(param_dtype=self.param_dtype)
      self.k_norm = RMSNorm(param_dtype=self.param_dtype)

  def _flat_projections(self, x: jax.Array) -> list[jax.Array]:
    """x [..., d] -> q, k, v [..., H*D] before norm and rotary."""
    return [proj(x) for proj in (self.q_proj, self.k_proj, self.v_proj)]

  def _raw_projections(self, x: jax.Array):
    """x [B, T, d] -> q, k, v [B, T, H, D] before norm and rotary."""
    batch, length, _ = x.shape
    return tuple(y.reshape(batch, length, self.num_heads, self.head_dim)
                 for y in self._flat_projections(x))

  def _project(self, x: jax.Array, positions: jax.Array, kv_hook: KVHook | None):
    return self._prepare(x, positions, kv_hook, *self._raw_projections(x))

  def _prepare(self, x, positions, kv_hook, q, k, v):
    """QK-norm, rotary and the kv_hook on the raw projections."""
    if self.qk_norm:
      q, k = self.q_norm(q), self.k_norm(k)
    q = apply_rotary(q, positions, self.rope_base)
    k = apply_rotary(k, positions, self.rope_base)
    if kv_hook is not None:
      k, v = kv_hook(x, k, v, positions)
    return q, k, v

  def _attend(self, q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
    """`causal_attention` of q, k, v [B, T, H, D], on head slices of a training mesh."""
    heads = sharding.MODEL if self.num_heads % sharding.model_parallelism() == 0 else None
    layout = (sharding.BATCH, None, heads)
    attend = functools.partial(causal_attention, window=self.window)
    return sharding.over_mesh(attend, in_layouts=(layout,) * 3, out_layouts=layout,
                              model_dims="attention heads")(q, k, v)

  def _output(self, o: jax.Array) -> jax.Array:
    batch, length = o.shape[:2]
    return self.o_proj(o.reshape(batch, length, self.num_heads * self.head_dim))

  def __call__(self, x: jax.Array, positions: jax.Array,
               kv_hook: KVHook | None = None) -> jax.Array:
    """x [B, T, d] at positions 0..T-1 ([B, T]) -> [B, T, d]."""
    q, k, v = self._project(x, positions, kv_hook)
    return self._output(self._attend(q, k, v))

  def prefill(self, x: jax.Array, positions: jax.Array, cache_len: int,
              kv_hook: KVHook | None = None):
    """The parallel pass over a prompt at positions 0..T-1; returns (y, cache).

    `cache_len` is the longest context decoding will reach: a full-attention cache holds
    that many entries, a sliding-window cache min(window, cache_len) (a ring buffer).
    """
    if self.window is None and x.shape[1] > cache_len:
      raise ValueError(f"prompt of {x.shape[1]} tokens does not fit a full-attention cache "
                       f"of {cache_len}")
    if self.window is not None:
      cache_len = min(self.window, cache_len)
    q, k, v = self._project(x, positions, kv_hook)
    y = self._output(self._attend(q, k, v))
    cache = init_attention_cache(x.shape[0], cache_len, self.num_heads, self.head_dim, k.dtype)
    return y, write_cache(cache, k, v, positions)

  def decode(self, x: jax.Array, positions: jax.Array, cache: AttentionCache,
             kv_hook: KVHook | None = None):
    """Appends one token per sequence (x [B, 1, d] at positions [B, 1]); returns (y, cache).

    Where the decode attention resolves to the GPU kernel and there is no kv_hook, one
    kernel forms q and k, writes the cache and attends (`decode_attention.append_and_attend`);
    otherwise the norm, rotary, `write_cache` and `single_query_attention` run apart (the
    reference)."""
    batch = x.shape[0]
    # Batch 1: the projections on two rows, GEMMs rather than reductions (decode_rows); a
    # kv_hook sees the batch as it is.
    pad = pad_rows if kv_hook is None else (lambda y: y)
    rows = pad(x)[:, 0]                                               # [B' >= B, d]
    flat = self._flat_projections(rows)                               # [B', H*D] each
    q, k, v = (y[:batch].reshape(batch, 1, self.num_heads, self.head_dim) for y in flat)
    impl = decode_attention.resolved_impl(self.decode_impl, q, cache.k, cache.v)
    if impl == "pallas_gpu" and kv_hook is None:
      scales = {}
      if self.qk_norm:
        scales = dict(q_norm_scale=self.q_norm.variables["params"]["scale"],
                      k_norm_scale=self.k_norm.variables["params"]["scale"],
                      norm_eps=self.q_norm.eps)
      # The three projections side by side, padded rows and all: on a GPU XLA merges the
      # three GEMMs into one whose output this concatenation of its slices is, so nothing
      # is copied; o comes back with the same rows (the padding zero).
      qkv = jnp.concatenate(flat, axis=-1).reshape(rows.shape[0], 3, self.num_heads,
                                                   self.head_dim)
      o, *cache = decode_attention.append_and_attend(
          qkv, cache.k, cache.v, cache.positions, positions, window=self.window,
          rope_inv_freq=inverse_frequencies(self.head_dim, self.rope_base), **scales)
      return self._output(o)[:batch], AttentionCache(*cache)
    q, k, v = self._prepare(x, positions, kv_hook, q, k, v)
    cache = write_cache(cache, k, v, positions)
    o = decode_attention.single_query_attention(q, cache.k, cache.v, positions,
                                                cache.positions, window=self.window,
                                                impl=impl)
    return self._output(pad(o))[:batch], cache
