"""Times one decode step of one mixer layer (projections included) against a full cache:
what `experiments.bench_decode` runs for each mixer, batch and context length.

The layer's decode cache is filled with random values as if `context` tokens had been
seen (every attention slot valid), and the jitted `decode` of one token is timed with the
cache donated (updated in place). SDM and GDN caches have a fixed size, so their step
time must not grow with the context.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import jax
import jax.numpy as jnp

from sdm_jax.models.config import LMConfig
from sdm_jax.models.mixers import MIXERS


def random_cache(shapes, context: int, key: jax.Array):
  """Random float leaves; integer leaves [B, L] (attention slot positions) hold the
  positions of the last L tokens of a `context`-token history: every slot is valid."""
  leaves, treedef = jax.tree.flatten(shapes)
  keys = jax.random.split(key, len(leaves))
  filled = []
  for leaf, leaf_key in zip(leaves, keys):
    if jnp.issubdtype(leaf.dtype, jnp.integer):
      length = leaf.shape[-1]
      positions = context - length + jnp.arange(length, dtype=leaf.dtype)
      filled.append(jnp.broadcast_to(positions, leaf.shape))
    else:
      filled.append(jax.random.normal(leaf_key, leaf.shape, leaf.dtype))
  return jax.tree.unflatten(treedef, filled)


def time_decode(config: LMConfig, batch: int, context: int, *, warmup: int,
                repeats: int) -> dict[str, Any]:
  """The median ms of one decode step of `config`'s single layer (its mixer letter is the
  pattern) at `batch` sequences after `context` tokens, over `repeats` steps after
  `warmup`; with the cache's bytes per sequence."""
  if config.num_layers != 1:
    raise ValueError(f"LMConfig.num_layers must be 1 (one mixer layer is timed), got "
                     f"{config.num_layers}")
  kind = config.layer_kinds
  mixer = MIXERS[kind].build(config, "mixer")
  dtype = jnp.dtype(config.compute_dtype)
  x = jax.random.normal(jax.random.PRNGKey(1), (batch, 1, config.d_model), dtype)
  positions = jnp.full((batch, 1), context, jnp.int32)
  params = jax.jit(mixer.init)(jax.random.PRNGKey(0), x, positions)
  cache_shapes = jax.eval_shape(
      lambda p: mixer.apply(p, x, jnp.zeros_like(positions), context, method="prefill")[1],
      params)
  cache = jax.jit(random_cache, static_argnums=1)(cache_shapes, context, jax.random.PRNGKey(2))
  cache_bytes = sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(cache))
  step = jax.jit(lambda p, xt, pos, c: mixer.apply(p, xt, pos, c, method="decode"),
                 donate_argnums=3)
  for _ in range(warmup):
    y, cache = step(params, x, positions, cache)
  jax.block_until_ready((y, cache))
  samples = []
  for _ in range(repeats):
    start = time.perf_counter()
    y, cache = step(params, x, positions, cache)
    jax.block_until_ready((y, cache))
    samples.append((time.perf_counter() - start) * 1e3)
  del cache
  return {"mixer": kind, "batch": batch, "context": context,
          "step_ms": statistics.median(samples), "min_ms": min(samples),
          "cache_bytes_per_sequence": cache_bytes // batch}
