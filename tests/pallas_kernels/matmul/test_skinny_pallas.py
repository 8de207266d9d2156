"""The skinny-matmul kernel against its XLA twin (`skinny_xla`): rows from 1 to 16, several
matrices of ragged widths, depths not a multiple of the block, dtypes, tilings, errors and
the GPU lowering. On CPU the kernel runs in interpret mode; the `gpu` test compiles it."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pallas_kernels.matmul import skinny_pallas
from pallas_kernels.matmul import skinny_xla


def _inputs(seed, rows, depth, widths, dtype=jnp.float32):
  rng = np.random.default_rng(seed)
  x = jnp.asarray(rng.normal(size=(rows, depth)), dtype)
  return x, [jnp.asarray(rng.normal(size=(depth, n)) / depth ** 0.5, dtype) for n in widths]


CONFIGS = [
    skinny_pallas.KernelConfig(),
    skinny_pallas.KernelConfig(max_block_n=32, block_k=32, min_programs=1),
    skinny_pallas.KernelConfig(max_block_n=16, block_k=64, num_warps=2, num_stages=1),
]


@pytest.mark.parametrize("config", CONFIGS, ids=str)
@pytest.mark.parametrize("rows,depth,widths", [
    (1, 64, [48, 32, 80]),     # ragged widths: tiles end inside a matrix
    (3, 100, [40]),            # depth not a multiple of block_k
    (16, 96, [16, 64]),        # a full tile of rows
])
def test_kernel_matches_the_twin(config, rows, depth, widths):
  x, weights = _inputs(0, rows, depth, widths)
  got = skinny_pallas.skinny_matmul(x, weights, config=config)
  want = skinny_xla.skinny_matmul(x, weights)
  assert got.shape == want.shape == (rows, sum(widths)) and got.dtype == x.dtype
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_bf16_sums_in_float32_and_rounds_once():
  x, weights = _inputs(1, 2, 512, [64, 32], jnp.bfloat16)
  got = skinny_pallas.skinny_matmul(x, weights)
  want = skinny_xla.skinny_matmul(x, weights)
  assert got.dtype == jnp.bfloat16
  exact = np.asarray(x, np.float64) @ np.concatenate([np.asarray(w, np.float64)
                                                       for w in weights], axis=1)
  np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32),
                             rtol=1e-2, atol=1e-2)
  # One rounding of a float32 sum: within half a bf16 ulp (2^-8 relative) of the exact value.
  np.testing.assert_array_less(np.abs(np.asarray(got, np.float64) - exact),
                               np.abs(exact) * 2.0 ** -8 + 1e-6)


def test_weights_take_x_dtype():
  x, weights = _inputs(2, 2, 64, [32])
  got = skinny_pallas.skinny_matmul(x.astype(jnp.bfloat16), weights)
  assert got.dtype == jnp.bfloat16


def test_column_block_halves_until_the_launch_is_wide_enough():
  config = skinny_pallas.KernelConfig(max_block_n=64, min_programs=128)
  assert skinny_pallas.column_block([2048] * 3, config) == 32    # 192 programs
  assert skinny_pallas.column_block([2048], config) == 16        # 128
  assert skinny_pallas.column_block([64], config) == 16          # never below 16
  assert skinny_pallas.column_block([8192], config) == 64        # 128 at the widest


@pytest.mark.parametrize("make,match", [
    (lambda x, w: (x[None], w), r"x must be \[M, K\]"),
    (lambda x, w: (x, []), "at least one"),
    (lambda x, w: (x, [w[0][:-1]]), r"weights\[0\] must be \[K, N\] with K = 64"),
    (lambda x, w: (jnp.ones((17, 64)), w), "at most 16"),
    (lambda x, w: (x.astype(jnp.float64), w), "float64"),
])
def test_rejects_what_it_cannot_take(make, match):
  with jax.enable_x64(True):
    x, weights = _inputs(3, 2, 64, [32])
    with pytest.raises(ValueError, match=match):
      skinny_pallas.skinny_matmul(*make(x, weights))


@pytest.mark.parametrize("field,value", [("max_block_n", 8), ("block_k", 48),
                                         ("num_stages", 0), ("min_programs", 0)])
def test_rejects_bad_configs(field, value):
  x, weights = _inputs(4, 2, 64, [32])
  config = skinny_pallas.KernelConfig()._replace(**{field: value})
  with pytest.raises(ValueError, match=f"KernelConfig.{field}"):
    skinny_pallas.skinny_matmul(x, weights, config=config)


def test_lowers_for_gpu_as_one_call():
  """The decode step's q/k/v at d = 2048 (three [2048, 2048] matrices, batch 1), on a CPU."""
  sd = jax.ShapeDtypeStruct
  w = sd((2048, 2048), jnp.bfloat16)
  lowered = jax.jit(lambda x, *ws: skinny_pallas.skinny_matmul(x, ws, interpret=False)).trace(
      sd((1, 2048), jnp.bfloat16), w, w, w).lower(lowering_platforms=("cuda",)).as_text()
  assert lowered.count("__gpu$xla.gpu.triton") == 1


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [jnp.bfloat16, jnp.float32])
@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_compiled_kernel_matches_the_twin(dtype, config):
  """On the GPU: an attention layer's q/k/v and output projection at d = 2048, M in 1, 8."""
  for rows in (1, 8):
    for widths in ([2048] * 3, [2048]):
      x, weights = _inputs(5, rows, 2048, widths, dtype)
      got = jax.jit(lambda x, ws: skinny_pallas.skinny_matmul(  # noqa: B023
          x, ws, config=config))(x, weights)
      want = jax.jit(skinny_xla.skinny_matmul)(x, weights)
      tolerance = 1e-4 if dtype == jnp.float32 else 2e-2
      np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32),
                                 rtol=tolerance, atol=tolerance)
