"""Generation helpers: Dense kernels stored in the compute dtype decode the same tokens.
(Generation itself is tested with the model, tests/sdm_jax/models/test_lm.py.)"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from sdm_jax.models.config import LMConfig
from sdm_jax.models.generate import dense_kernels_in
from sdm_jax.models.lm import LM


def test_dense_kernels_in_the_compute_dtype_leave_every_decode_step_unchanged():
  """bf16 compute, attention and SDM mixers (G's projections are Dense layers like
  theirs), MLPs and the head: only Dense kernels change dtype, and prefill logits and a
  decode step's logits (what `generate` samples from) are bit-identical."""
  config = LMConfig(vocab_size=50, d_model=32, num_heads=2, max_seq_len=64, pattern="AM",
                    num_layers=2, window=4, gdn_chunk_size=8, sdm_slots=64, sdm_writes=4,
                    sdm_reads=4, sdm_chunk_size=8, sdm_impl="reference",
                    compute_dtype="bfloat16")
  model = LM(config)
  tokens = jax.random.randint(jax.random.PRNGKey(0), (2, 9), 0, config.vocab_size)
  params = jax.jit(model.init)(jax.random.PRNGKey(1), tokens)  # one compile, not one per op
  cast = dense_kernels_in(params, jnp.bfloat16)
  flat, flat_cast = (jax.tree_util.tree_flatten_with_path(p)[0] for p in (params, cast))
  kernels = 0
  for (path, leaf), (_, leaf_cast) in zip(flat, flat_cast):
    is_kernel = path[-1].key == "kernel"
    kernels += is_kernel
    assert leaf_cast.dtype == (jnp.bfloat16 if is_kernel else leaf.dtype), path
  assert kernels >= 10  # the mixers' projections and gates, the MLPs and the head

  prefill = jax.jit(lambda p, t: model.apply(p, t, 16, method=LM.prefill))
  decode = jax.jit(lambda p, t, pos, c: model.apply(p, t, pos, c, method=LM.decode))
  (logits, caches), (logits_cast, caches_cast) = prefill(params, tokens), prefill(cast, tokens)
  np.testing.assert_array_equal(logits, logits_cast)
  token, position = tokens[:, :1], jnp.full((2, 1), 9)
  np.testing.assert_array_equal(decode(params, token, position, caches)[0],
                                decode(cast, token, position, caches_cast)[0])


def test_dense_kernels_in_a_dtype_no_narrower_change_nothing():
  params = {"dense": {"kernel": jnp.ones((2, 3), jnp.bfloat16), "bias": jnp.ones(3)}}
  assert jax.tree.map(lambda x: x.dtype, dense_kernels_in(params, jnp.float32)) == {
      "dense": {"kernel": jnp.bfloat16, "bias": jnp.float32}}
