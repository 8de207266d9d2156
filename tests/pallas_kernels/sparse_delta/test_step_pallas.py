"""The fused decode-step kernel against the XLA step (`sdm_jax.ops.sparse_delta_step`).

On CPU the kernel runs in interpret mode; the `gpu` test compiles it with Triton.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pallas_kernels.sparse_delta import step_pallas
from sdm_jax.ops.sparse_delta import sparse_delta_step
from tests.sdm_jax.ops.test_sparse_delta import random_inputs


def _tokens(seed, *, steps, table_dtype, **shape):
  """The table [B, H, N, Dv] and `steps` tokens of step inputs ([B, H, ...] each)."""
  memory, *tokens = random_inputs(seed, seq_len=steps, full_overwrite=False, **shape)
  return memory.astype(table_dtype), [[x[:, t] for x in tokens] for t in range(steps)]


def _run(step, memory, tokens):
  outs = []
  for token in tokens:
    out, memory = step(memory, *token)
    outs.append(out)
  return jnp.stack(outs), memory


@pytest.mark.parametrize("error,table_dtype,block_cols", [
    ("shared", jnp.float32, 16), ("shared", jnp.bfloat16, 32), ("per_slot", jnp.float32, 16),
    ("per_slot", jnp.bfloat16, 16)])
def test_matches_the_xla_step_over_several_tokens(error, table_dtype, block_cols):
  # W = 5 and R = 3 pad to 16 lanes; head 1 reads the slots it writes; head 2 decays hard.
  memory, tokens = _tokens(0, steps=4, table_dtype=table_dtype, batch=2, heads=3,
                           num_slots=24, value_dim=32, writes=5, reads=3)
  kernel = jax.jit(lambda m, *t: step_pallas.sparse_delta_step(
      m, *t, error=error, block_cols=block_cols, interpret=True))
  xla = jax.jit(lambda m, *t: sparse_delta_step(m, *t, error=error, impl="chunked"))
  out, final = _run(kernel, memory, tokens)
  out_ref, final_ref = _run(xla, memory, tokens)
  assert final.dtype == table_dtype
  tol = 1e-6 if table_dtype == jnp.float32 else 1e-2  # bf16: one rounding may differ
  np.testing.assert_allclose(out, out_ref, rtol=tol, atol=tol)
  np.testing.assert_allclose(final.astype(jnp.float32), final_ref.astype(jnp.float32),
                             rtol=tol, atol=tol)
  assert not np.allclose(final.astype(jnp.float32), memory.astype(jnp.float32))


def test_rejects_what_it_cannot_take():
  memory, (token,) = _tokens(1, steps=1, table_dtype=jnp.float32, batch=1, heads=1,
                             num_slots=9, value_dim=24, writes=2, reads=2)
  with pytest.raises(ValueError, match="Dv must be a multiple of 16, got 24"):
    step_pallas.sparse_delta_step(memory, *token, interpret=True)
  memory = jnp.zeros((1, 1, 9, 32))
  with pytest.raises(ValueError, match="block_cols must be a power of two >= 16"):
    step_pallas.sparse_delta_step(memory, *token[:2], jnp.ones((1, 1, 32)), *token[3:],
                                  block_cols=48, interpret=True)
  with pytest.raises(ValueError, match="error must be one of"):
    step_pallas.sparse_delta_step(memory, *token, error="typo", interpret=True)


@pytest.mark.gpu
@pytest.mark.parametrize("error,table_dtype", [("shared", jnp.bfloat16), ("per_slot", jnp.float32)])
def test_compiled_kernel_matches_the_xla_step(error, table_dtype):
  memory, tokens = _tokens(2, steps=3, table_dtype=table_dtype, batch=3, heads=2,
                           num_slots=4096, value_dim=256, writes=64, reads=64)
  kernel = jax.jit(lambda m, *t: step_pallas.sparse_delta_step(m, *t, error=error))
  xla = jax.jit(lambda m, *t: sparse_delta_step(m, *t, error=error, impl="chunked"))
  out, final = _run(kernel, memory, tokens)
  out_ref, final_ref = _run(xla, memory, tokens)
  tol = 1e-5 if table_dtype == jnp.float32 else 1e-2
  np.testing.assert_allclose(out, out_ref, rtol=tol, atol=tol)
  np.testing.assert_allclose(final.astype(jnp.float32), final_ref.astype(jnp.float32),
                             rtol=tol, atol=tol)
