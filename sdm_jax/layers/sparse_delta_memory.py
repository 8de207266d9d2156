"""The Sparse Delta Memory mixer `M` (DESIGN.md section 3.3).

Per head h (S sub-keys, N = S^2 slots, Dv = d / H):
  I_t, k_t = product_key_topk(W_k x + b_k, W)    write slots, softmax write weights
  J_t, q_t = product_key_topk(W_q x + b_q, R)    read slots, softmax read weights
  v_t      = W_v x                               (no short conv, no activation)
  g, beta  = DeltaGates(x)
  o        = sparse_delta_rule(M0, I, k, v, beta, g, J, q)   (M0 [H, N, Dv] shared start)
  y        = W_o (LayerNorm(o) * sigmoid(W_gate x))         (per-head LayerNorm)

Decode cache: the per-sequence table [B, H, N, Dv] in `memory_dtype`, nothing else:
constant memory per sequence at any context length.

On a training mesh with a "model" axis (`sdm_jax.sharding`) the op runs on column slices:
each device holds M0 [H, N, Dv / model] and its sequences' tables [b, H, N, Dv / model], and
the recurrence, independent per value column, needs no communication; the readings are
joined for the per-head LayerNorm and the output projection.
"""

from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp

from pallas_kernels import platform
from sdm_jax import sharding
from sdm_jax.layers.decode_rows import pad_rows
from sdm_jax.layers.gates import DeltaGates
from sdm_jax.layers.recurrent_mixer import RecurrentMixer
from sdm_jax.ops.product_key import product_key_topk
from sdm_jax.ops.slot_balance import product_key_balance
from sdm_jax.ops.sparse_delta import sparse_delta_rule, sparse_delta_step

INITIAL_MEMORY_NAME = "M0"
# The collection and name under which the parallel pass sows the addressing balance.
BALANCE_COLLECTION, BALANCE_NAME = "losses", "addressing_balance"

# How `sparse_delta_rule`'s arguments and results split over a mesh (`sharding.over_mesh`):
# tokens by sequence, values, readings and tables also by value column.
_TOKENS = (sharding.BATCH,)
_COLUMNS = (sharding.BATCH, None, None, sharding.MODEL)  # [B, T, H, Dv] and [B, H, N, Dv]
_SHARED_TABLE = (None, None, sharding.MODEL)  # [H, N, Dv]
OP_LAYOUTS = dict(in_layouts=(_SHARED_TABLE, _TOKENS, _TOKENS, _COLUMNS, _TOKENS, _TOKENS,
                              _TOKENS, _TOKENS),
                  out_layouts=(_COLUMNS, _COLUMNS),
                  model_dims="SDM's value dim per head Dv (model_dim / sdm_heads)")


class SparseDeltaMemoryCache(NamedTuple):
  """Decode cache of `M`: memory [B, H, N, Dv], the table after the last token, in the
  layer's `memory_dtype` (constant size at any context length)."""
  memory: jax.Array


def sub_keys_per_head(num_slots: int) -> int:
  """S = sqrt(N); ValueError unless N is a perfect square >= 1."""
  sub_keys = math.isqrt(num_slots) if num_slots >= 1 else 0
  if sub_keys < 1 or sub_keys * sub_keys != num_slots:
    raise ValueError(f"num_slots (N per head) must be a perfect square >= 1 (N = S * S for "
                     f"product keys), got {num_slots}")
  return sub_keys


def addressing(scores: jax.Array, count: int, impl: str = "auto"
               ) -> tuple[jax.Array, jax.Array]:
  """Product-key scores [..., 2S] (e.g. [B, T, H, 2S]) -> (slot ids [..., count] int32,
  float32 weights [..., count] = softmax over the selected sums)."""
  idx, logits = product_key_topk(scores.astype(jnp.float32), count, impl=impl)
  return idx, jax.nn.softmax(logits, axis=-1)


MEMORY_DTYPES = ("float32", "bfloat16")


def resolve_memory_dtype(memory_dtype, compute_dtype) -> jnp.dtype:
  """The table's storage dtype: `memory_dtype` if set, else bfloat16 on GPU for bfloat16
  activations and float32 otherwise."""
  if memory_dtype is not None:
    dtype = jnp.dtype(memory_dtype)
    if dtype.name not in MEMORY_DTYPES:
      raise ValueError(f"memory_dtype must be one of {MEMORY_DTYPES} or None, got {memory_dtype!r}")
    return dtype
  if platform.on_gpu() and jnp.dtype(compute_dtype) == jnp.bfloat16:
    return jnp.dtype(jnp.bfloat16)
  return jnp.dtype(jnp.float32)


class SparseDeltaMemory(RecurrentMixer):
  """Sparse Delta Memory mixer; methods `__call__`, `prefill`, `decode` as every mixer.

  Attributes:
    model_dim: d.
    num_heads: H; the value dim per head is Dv = d / H.
    num_slots: N per head, a perfect square (S = sqrt(N) sub-keys per half).
    num_writes: W, slots written per token and head.
    num_reads: R, slots read per token and head.
    error: "shared" or "per_slot" (see `sparse_delta_rule`).
    learn_m0: learned initial table `M0` [H, N, Dv]; False starts from zeros (no parameter).
    chunk_size, impl: passed to `sparse_delta_rule`.
    topk_impl: passed to `product_key_topk` ("auto", "xla", "pallas", "pallas_gpu" or
      "pallas_tpu").
    memory_dtype: storage dtype of the per-sequence table (and decode cache): "float32",
      "bfloat16", or None = bfloat16 on GPU when `dtype` is bfloat16 (what the authors
      train with; the op widens rows and accumulates in float32, and keeps the table's
      gradient in the same dtype between chunks), float32 otherwise. M0 stays a
      `param_dtype` parameter.
    balance_loss: the parallel pass sows the mean `product_key_balance` of its write and
      read selections as `BALANCE_COLLECTION` / `BALANCE_NAME` (a training loss term).
    tied_addressing_init: the read (query) projection starts as a copy of the write (key)
      projection, so at initialisation a token reads the slots it would write; the two are
      trained apart. False (the design's): independent draws, whose selections overlap in
      about W R / N slots, which vanishes for large N (a study remedy: WORKSPACE.md, issue
      18).
  """

  model_dim: int
  num_heads: int
  num_slots: int
  num_writes: int
  num_reads: int
  error: str = "shared"
  learn_m0: bool = True
  chunk_size: int = 32
  impl: str = "auto"
  topk_impl: str = "auto"
  memory_dtype: Any = None
  balance_loss: bool = False
  tied_addressing_init: bool = False
  dtype: Any = jnp.float32
  param_dtype: Any = jnp.float32

  @property
  def value_dim(self) -> int:
    return self.model_dim // self.num_heads

  def setup(self):
    if self.model_dim % self.num_heads:
      raise ValueError(f"model_dim ({self.model_dim}) must be divisible by num_heads "
                       f"({self.num_heads})")
    sub_keys = sub_keys_per_head(self.num_slots)
    resolve_memory_dtype(self.memory_dtype, self.dtype)  # validates memory_dtype
    dense = lambda features, name, bias=False, **init: nn.Dense(  # noqa: E731
        features, use_bias=bias, dtype=self.dtype, param_dtype=self.param_dtype, name=name,
        **init)
    score_width = self.num_heads * 2 * sub_keys
    # The one key both addressing kernels are drawn from when initialising (the biases start
    # at 0). Flax also evaluates the init's shape when applying, with no key drawn: any does.
    tied = {}
    addressing_init = {}
    if self.tied_addressing_init:
      addressing_init = dict(kernel_init=lambda key, shape, dtype: nn.linear.default_kernel_init(
          tied.get("key", key), shape, dtype))
    self.key_proj = dense(score_width, "key_proj", bias=True, **addressing_init)
    self.query_proj = dense(score_width, "query_proj", bias=True, **addressing_init)
    self.value_proj = dense(self.model_dim, "value_proj")
    self.gate_proj = dense(self.model_dim, "gate_proj")
    self.out_proj = dense(self.model_dim, "out_proj")
    self.gates = DeltaGates(self.num_heads, dtype=self.dtype, param_dtype=self.param_dtype)
    self.out_norm = nn.LayerNorm(dtype=self.dtype, param_dtype=self.param_dtype)
    shape = (self.num_heads, self.num_slots, self.value_dim)
    if self.learn_m0:
      init = nn.initializers.truncated_normal(stddev=self.model_dim**-0.5)
      self.initial_memory = self.param(INITIAL_MEMORY_NAME, init, shape, self.param_dtype)
    else:
      self.initial_memory = jnp.zeros(shape, self.param_dtype)
    if self.tied_addressing_init and self.is_initializing():
      # Drawn after M0's, so every other parameter starts as it would without the tie.
      tied["key"] = self.make_rng("params")

  def _inputs(self, x: jax.Array, sow_balance: bool = False):
    """x [B, T, d] -> the op's token inputs (write ids/weights, v, beta, g, read ids/weights);
    with `sow_balance`, also sows the selections' balance (`balance_loss`)."""
    chex.assert_rank(x, 3)
    chex.assert_axis_dimension(x, 2, self.model_dim)
    batch, length, _ = x.shape
    heads = lambda y: y.reshape(batch, length, self.num_heads, -1)  # noqa: E731
    write_scores, read_scores = heads(self.key_proj(x)), heads(self.query_proj(x))
    if self.num_writes == self.num_reads:
      # Both selections in one call: half the launches (decoding is launch-bound).
      (write_idx, read_idx), (write_w, read_w) = addressing(
          jnp.stack([write_scores, read_scores]), self.num_writes, self.topk_impl)
    else:
      write_idx, write_w = addressing(write_scores, self.num_writes, self.topk_impl)
      read_idx, read_w = addressing(read_scores, self.num_reads, self.topk_impl)
    if sow_balance:
      self.sow(BALANCE_COLLECTION, BALANCE_NAME,
               (product_key_balance(write_scores, write_idx)
                + product_key_balance(read_scores, read_idx)) / 2)
    g, beta = self.gates(x)
    return write_idx, write_w, heads(self.value_proj(x)), beta, g, read_idx, read_w

  def _output(self, x: jax.Array, readings: jax.Array) -> jax.Array:
    """readings [B, T, H, Dv] -> W_o (LayerNorm(readings) * sigmoid(W_gate x)) [B, T, d]."""
    batch, length = x.shape[:2]
    normed = self.out_norm(readings).reshape(batch, length, self.model_dim)
    return self.out_proj(normed * jax.nn.sigmoid(self.gate_proj(x)))

  @property
  def table_dtype(self) -> jnp.dtype:
    return resolve_memory_dtype(self.memory_dtype, self.dtype)

  def _run(self, x: jax.Array):
    """The parallel pass; the cache holds the final table."""
    # Not while initialising: the variables would carry the sown value as a collection.
    inputs = self._inputs(x, sow_balance=self.balance_loss and not self.is_initializing())
    memory = self.initial_memory.astype(self.table_dtype)  # [H, N, Dv], broadcast over B
    op = functools.partial(sparse_delta_rule, chunk_size=self.chunk_size, error=self.error,
                           impl=self.impl)
    readings, final_memory = sharding.over_mesh(op, **OP_LAYOUTS)(memory, *inputs)
    return self._output(x, readings), SparseDeltaMemoryCache(memory=final_memory)

  def decode(self, x: jax.Array, positions: jax.Array, cache: SparseDeltaMemoryCache):
    """One token per sequence (x [B, 1, d]) -> (y [B, 1, d], cache)."""
    del positions
    chex.assert_axis_dimension(x, 1, 1)
    batch = x.shape[0]
    padded = pad_rows(x)  # batch 1: GEMMs, not reductions (decode_rows)
    step_inputs = [a[:batch, 0] for a in self._inputs(padded)]
    readings, memory = sparse_delta_step(cache.memory, *step_inputs, error=self.error,
                                         impl=self.impl)
    readings = pad_rows(readings[:, None].astype(x.dtype))
    return self._output(padded, readings)[:batch], SparseDeltaMemoryCache(memory=memory)
