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


def test_auto_keeps_xla_and_pallas_runs_the_kernel():
  assert not decode_attention.AUTO_TAKES_KERNEL
  assert not _runs_a_kernel("auto") and not _runs_a_kernel("xla")
  assert _runs_a_kernel("pallas") and _runs_a_kernel("pallas_gpu")


def test_unknown_impl_raises():
  with pytest.raises(ValueError, match="impl must be one of"):
    decode_attention.single_query_attention(*_args(), impl="cudnn")
