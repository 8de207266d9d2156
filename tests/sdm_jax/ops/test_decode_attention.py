"""Which implementation `single_query_attention(impl=...)` runs, and its errors. The math of
both paths is checked in tests/pallas_kernels/attention and tests/sdm_jax/layers."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from sdm_jax.ops import decode_attention


def _args():
  q = jax.random.normal(jax.random.PRNGKey(0), (1, 1, 2, 16))
  k = jax.random.normal(jax.random.PRNGKey(1), (1, 8, 2, 16))
  return q, k, k * 2, jnp.full((1, 1), 7, jnp.int32), jnp.arange(8, dtype=jnp.int32)[None]


def _runs_a_kernel(impl) -> bool:
  jaxpr = jax.make_jaxpr(lambda *a: decode_attention.single_query_attention(*a, impl=impl))(
      *_args())
  return "pallas_call" in str(jaxpr)


def test_auto_runs_xla_off_a_gpu_and_pallas_runs_the_kernel():
  assert not _runs_a_kernel("auto") and not _runs_a_kernel("xla")
  assert _runs_a_kernel("pallas") and _runs_a_kernel("pallas_gpu")


def test_auto_takes_the_kernel_on_a_gpu_up_to_its_cache_size():
  """The rule "auto" applies on a GPU (timed on the H200): the kernel up to
  AUTO_KERNEL_MAX_CACHE_SLOTS slots over the batch, XLA above."""
  limit = decode_attention.AUTO_KERNEL_MAX_CACHE_SLOTS
  q = jax.ShapeDtypeStruct((8, 1, 16, 128), jnp.bfloat16)
  at_limit = jax.ShapeDtypeStruct((8, limit // 8, 16, 128), jnp.bfloat16)
  above = jax.ShapeDtypeStruct((8, limit // 8 + 1, 16, 128), jnp.bfloat16)
  assert decode_attention.auto_kernel_problem(q, at_limit, at_limit) is None
  assert "cache slots" in decode_attention.auto_kernel_problem(q, above, above)


def test_unknown_impl_raises():
  with pytest.raises(ValueError, match="impl must be one of"):
    decode_attention.single_query_attention(*_args(), impl="cudnn")
