"""The `M` mixer: shapes and dtypes, cached decode, the learned initial table M0.

Parameters do not depend on `impl`, so most checks run the token-by-token reference (fast
to compile); the chunked path (the default) is compared with cached decoding once. Each
test compiles one program (CPU compile time dominates).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sdm_jax.layers.sparse_delta_memory import SparseDeltaMemory
from sdm_jax.layers.sparse_delta_memory import addressing
from sdm_jax.layers.sparse_delta_memory import resolve_memory_dtype
from sdm_jax.layers.sparse_delta_memory import sub_keys_per_head

LENGTH = 11
PREFILL = SparseDeltaMemory.prefill


def make_layer(**overrides):
  values = dict(model_dim=16, num_heads=2, num_slots=16, num_writes=3, num_reads=2,
                chunk_size=4, impl="reference")
  return SparseDeltaMemory(**{**values, **overrides})


def inputs(length=LENGTH):
  x = jax.random.normal(jax.random.PRNGKey(0), (2, length, 16))
  return x, jnp.broadcast_to(jnp.arange(length), (2, length))


@pytest.fixture(scope="module")
def params():
  x, positions = inputs()
  return jax.jit(make_layer().init)(jax.random.PRNGKey(1), x, positions)


def test_shapes_and_dtypes(params):
  weights = params["params"]
  assert weights["M0"].shape == (2, 16, 8) and weights["M0"].dtype == jnp.float32
  assert weights["key_proj"]["kernel"].shape == weights["query_proj"]["kernel"].shape == (16, 16)
  assert weights["key_proj"]["bias"].shape == (16,)  # H * 2S = 2 * 8
  assert weights["value_proj"]["kernel"].shape == (16, 16)
  assert set(weights["gates"]) == {"A_log", "dt_bias", "a_proj", "b_proj"}
  x, _ = inputs()
  bf16 = make_layer(dtype=jnp.bfloat16)
  y, cache = jax.jit(lambda p, x: bf16.apply(p, x, None, 64, method=PREFILL))(
      params, x.astype(jnp.bfloat16))
  assert y.shape == x.shape and y.dtype == jnp.bfloat16
  assert bool(jnp.all(jnp.isfinite(y.astype(jnp.float32))))
  # The default table is bf16 on GPU for bf16 activations, float32 elsewhere.
  table_dtype = jnp.bfloat16 if jax.default_backend() == "gpu" else jnp.float32
  assert cache.memory.shape == (2, 2, 16, 8) and cache.memory.dtype == table_dtype


def test_memory_dtype_picks_the_table_storage(params):
  assert resolve_memory_dtype("bfloat16", jnp.float32) == jnp.bfloat16
  assert resolve_memory_dtype(None, jnp.float32) == jnp.float32
  gpu = jax.default_backend() == "gpu"
  assert resolve_memory_dtype(None, jnp.bfloat16) == (jnp.bfloat16 if gpu else jnp.float32)
  with pytest.raises(ValueError, match="memory_dtype must be one of"):
    resolve_memory_dtype("float16", jnp.float32)
  # A bf16 table: the cache is bf16, M0 stays a float32 parameter, and decoding after a
  # prompt follows the parallel pass up to bf16 rounding of the stored rows.
  layer = make_layer(memory_dtype="bfloat16", impl="chunked")
  x, _ = inputs()

  @jax.jit
  def run(params, x):
    full, _ = layer.apply(params, x, None, 64, method=PREFILL)
    _, cache = layer.apply(params, x[:, :LENGTH - 1], None, 64, method=PREFILL)
    last, cache = layer.apply(params, x[:, LENGTH - 1:], None, cache,
                              method=SparseDeltaMemory.decode)
    return full, last, cache

  full, last, cache = run(params, x)
  assert cache.memory.dtype == jnp.bfloat16
  np.testing.assert_allclose(last[:, 0], full[:, -1], rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("error, impl, batch", [
    ("shared", "chunked", 2), ("per_slot", "reference", 2), ("shared", "pallas", 2),
    ("shared", "chunked", 1)])
def test_cached_decode_equals_parallel_forward(params, error, impl, batch):
  """"pallas": the phase-2 kernels and the fused step kernel, interpreted on CPU (one head,
  so that Dv = 16 suits them). Batch 1: the step's projections run on a padded row
  (`decode_rows`)."""
  overrides = dict(num_heads=1, chunk_size=16) if impl == "pallas" else {}
  layer = make_layer(error=error, impl=impl, **overrides)
  x, positions = inputs()
  x = x[:batch]
  if impl == "pallas":
    params = jax.jit(layer.init)(jax.random.PRNGKey(1), x, positions)
  prompt = 3

  @jax.jit
  def run(params, x):
    """(parallel outputs, prompt outputs, outputs decoded token by token after the prompt)."""
    full, _ = layer.apply(params, x, None, 64, method=PREFILL)
    head, cache = layer.apply(params, x[:, :prompt], None, 64, method=PREFILL)

    def step(cache, x_t):
      y, cache = layer.apply(params, x_t[:, None], None, cache, method=SparseDeltaMemory.decode)
      return cache, y[:, 0]
    cache, decoded = jax.lax.scan(step, cache, jnp.swapaxes(x[:, prompt:], 0, 1))
    return full, head, jnp.swapaxes(decoded, 0, 1), cache

  full, head, decoded, cache = run(params, x)
  assert full.shape == x.shape
  np.testing.assert_allclose(head, full[:, :prompt], rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(decoded, full[:, prompt:], rtol=1e-4, atol=1e-5)
  assert cache.memory.shape == (batch, layer.num_heads, 16, 16 // layer.num_heads)


def test_learned_initial_table_gets_a_gradient(params):
  layer = make_layer()
  x, positions = inputs()
  loss = lambda p: jnp.sum(jnp.square(layer.apply(p, x, positions)))  # noqa: E731
  grads = jax.jit(jax.grad(loss))(params)
  assert float(jnp.max(jnp.abs(grads["params"]["M0"]))) > 0
  std = float(jnp.std(params["params"]["M0"]))
  assert 0.5 * 16**-0.5 < std < 1.5 * 16**-0.5  # truncated normal, std d^-0.5


def test_a_tied_addressing_init_copies_the_write_projection_into_the_read_one(params):
  x, positions = inputs()
  layer = make_layer(tied_addressing_init=True)

  @jax.jit
  def init_and_read(x):
    tied = layer.init(jax.random.PRNGKey(1), x, positions)
    return tied, layer.apply(tied, x, positions)

  tied, y = init_and_read(x)
  tied, untied = tied["params"], params["params"]
  np.testing.assert_array_equal(tied["query_proj"]["kernel"], tied["key_proj"]["kernel"])
  assert not np.array_equal(untied["query_proj"]["kernel"], untied["key_proj"]["kernel"])
  # A lecun-normal draw like the untied kernels', and every other parameter the same draw
  # as untied (to rounding: the two inits are compiled in different programs).
  assert 0.5 < float(jnp.std(tied["key_proj"]["kernel"]) / jnp.std(
      untied["key_proj"]["kernel"])) < 2.0
  for name in set(untied) - {"key_proj", "query_proj"}:
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7),
                 tied[name], untied[name])
  # So at initialisation every token reads the slots it writes.
  write_idx, _, _, _, _, read_idx, _ = layer.apply({"params": tied}, x, method="_inputs")
  np.testing.assert_array_equal(np.sort(write_idx[..., :2], -1), np.sort(read_idx, -1))
  assert y.shape == x.shape and bool(jnp.all(jnp.isfinite(y)))


def test_without_learn_m0_the_table_starts_at_zero():
  layer = make_layer(learn_m0=False)
  x, positions = inputs(length=1)

  @jax.jit
  def init_and_prefill(x):
    params = layer.init(jax.random.PRNGKey(1), x, positions)
    return params, layer.apply(params, x, positions, 8, method=PREFILL)[1]

  params, cache = init_and_prefill(x)
  assert "M0" not in params["params"]
  # After one token only the W = 3 written rows of each head differ from the zero start.
  nonzero_rows = jnp.sum(jnp.any(cache.memory != 0, axis=-1), axis=-1)
  assert int(jnp.max(nonzero_rows)) <= 3 and int(jnp.min(nonzero_rows)) >= 1


def test_slots_must_be_a_perfect_square():
  assert sub_keys_per_head(4096) == 64
  with pytest.raises(ValueError, match="perfect square"):
    sub_keys_per_head(15)
  x, positions = inputs()
  with pytest.raises(ValueError, match="perfect square"):
    make_layer(num_slots=15).init(jax.random.PRNGKey(0), x, positions)


def test_topk_kernel_gives_the_same_layer(params):
  x, positions = inputs()
  outputs = [jax.jit(make_layer(topk_impl=impl).apply)(params, x, positions)
             for impl in ("xla", "pallas")]
  np.testing.assert_allclose(outputs[0], outputs[1], rtol=1e-6, atol=1e-6)


def test_equal_writes_and_reads_are_selected_in_one_call():
  """With W = R the layer stacks both score sets into one top-k; ids and weights must be
  what two separate selections give."""
  layer = make_layer(num_writes=3, num_reads=3)
  x, positions = inputs()
  layer_params = layer.init(jax.random.PRNGKey(2), x, positions)

  def separately(module, x):
    heads = lambda y: y.reshape(*x.shape[:2], module.num_heads, -1)  # noqa: E731
    return (addressing(heads(module.key_proj(x)), 3), addressing(heads(module.query_proj(x)), 3))

  write_idx, write_w, _, _, _, read_idx, read_w = layer.apply(layer_params, x,
                                                              method=SparseDeltaMemory._inputs)
  (want_write_idx, want_write_w), (want_read_idx, want_read_w) = layer.apply(
      layer_params, x, method=separately)
  np.testing.assert_array_equal(write_idx, want_write_idx)
  np.testing.assert_array_equal(read_idx, want_read_idx)
  np.testing.assert_array_equal(write_w, want_write_w)
  np.testing.assert_array_equal(read_w, want_read_w)
  assert not np.array_equal(write_idx, read_idx)  # two different selections
