"""Times one decode step of one mixer layer (projections included) against a full cache.

  python -m experiments.bench_decode --mixers=M,G,S,A --batches=1,8 \
      --contexts=8192,32768,131072

For each mixer letter, batch and context length: builds a one-layer LMConfig at
--d_model, fills the layer's decode cache with random values as if `context` tokens had
been seen (every attention slot valid), and times the jitted `decode` of one token with
the cache donated (updated in place), median of --repeats calls after --warmup. SDM and
GDN caches have a fixed size, so their step time must not grow with the context. Prints a
table and, last, one JSON object.
"""

from __future__ import annotations

import statistics
import time

from absl import flags
import jax
import jax.numpy as jnp

from experiments import cli
from sdm_jax.models.config import LMConfig
from sdm_jax.models.mixers import MIXERS
from sdm_jax.training import records

_MIXERS = flags.DEFINE_list("mixers", ["M", "G", "S", "A"], "Mixer letters to time.")
_BATCHES = flags.DEFINE_list("batches", ["1", "8"], "Batch sizes.")
_CONTEXTS = flags.DEFINE_list("contexts", ["8192", "32768", "131072"], "Context lengths.")
_D_MODEL = flags.DEFINE_integer("d_model", 2048, "Model width d.")
_HEADS = flags.DEFINE_integer("heads", 16, "Attention heads (head dim d / heads).")
_WINDOW = flags.DEFINE_integer("window", 2048, "Keys per query of the S mixer.")
_GDN_HEADS = flags.DEFINE_integer("gdn_heads", 16, "GDN heads.")
_GDN_HEAD_DIM = flags.DEFINE_integer("gdn_head_dim", 64, "GDN key dim K per head.")
_GDN_EXPAND_V = flags.DEFINE_float("gdn_expand_v", 2.0, "GDN value dim = expand_v * K.")
_SDM_HEADS = flags.DEFINE_integer("sdm_heads", 1, "SDM heads.")
_SDM_SLOTS = flags.DEFINE_integer("sdm_slots", 262_144, "SDM slots N per head.")
_SDM_WRITES = flags.DEFINE_integer("sdm_writes", 64, "SDM slots written per token W.")
_SDM_READS = flags.DEFINE_integer("sdm_reads", 64, "SDM slots read per token R.")
_DTYPE = flags.DEFINE_enum("compute_dtype", "bfloat16", ["bfloat16", "float32"],
                           "Activation dtype (parameters are float32).")
_WARMUP = flags.DEFINE_integer("warmup", 3, "Untimed steps.")
_REPEATS = flags.DEFINE_integer("repeats", 20, "Timed steps; the median is reported.")


def layer_config(kind: str, context: int) -> LMConfig:
  return LMConfig(
      d_model=_D_MODEL.value, num_layers=1, pattern=kind, num_heads=_HEADS.value,
      window=_WINDOW.value, max_seq_len=max(context + 1, _WINDOW.value),
      compute_dtype=_DTYPE.value, gdn_heads=_GDN_HEADS.value,
      gdn_head_dim=_GDN_HEAD_DIM.value, gdn_expand_v=_GDN_EXPAND_V.value,
      sdm_heads=_SDM_HEADS.value, sdm_slots=_SDM_SLOTS.value, sdm_writes=_SDM_WRITES.value,
      sdm_reads=_SDM_READS.value)


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


def time_decode(kind: str, batch: int, context: int) -> dict:
  config = layer_config(kind, context)
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
  for _ in range(_WARMUP.value):
    y, cache = step(params, x, positions, cache)
  jax.block_until_ready((y, cache))
  samples = []
  for _ in range(_REPEATS.value):
    start = time.perf_counter()
    y, cache = step(params, x, positions, cache)
    jax.block_until_ready((y, cache))
    samples.append((time.perf_counter() - start) * 1e3)
  del cache
  return {"mixer": kind, "batch": batch, "context": context,
          "step_ms": statistics.median(samples), "min_ms": min(samples),
          "cache_bytes_per_sequence": cache_bytes // batch}


def main(argv):
  del argv
  results = []
  for kind in _MIXERS.value:
    if kind not in MIXERS:
      raise ValueError(f"--mixers has unknown letter {kind!r}; known: {sorted(MIXERS)}")
    for batch in map(int, _BATCHES.value):
      for context in map(int, _CONTEXTS.value):
        result = time_decode(kind, batch, context)
        results.append(result)
        print(f"{kind} B={batch:<2d} context={context:>7,d}: {result['step_ms']:8.3f} ms/token "
              f"(cache {result['cache_bytes_per_sequence'] / 2**20:,.1f} MiB/sequence)",
              flush=True)
  print(records.dumps({"device": str(jax.devices()[0].device_kind), "jax": jax.__version__,
                       "d_model": _D_MODEL.value, "results": results}))


if __name__ == "__main__":
  cli.run(main)
