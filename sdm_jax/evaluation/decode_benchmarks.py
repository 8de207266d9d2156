"""Times one decode step of one mixer layer (projections included) against a full cache,
and whole-model decoding in tokens/s: what `experiments.bench_decode` runs for each mixer
(or model), batch and context length.

The layer's decode cache is filled with random values as if `context` tokens had been
seen (every attention slot valid), and the jitted `decode` of one token is timed with the
cache donated (updated in place). SDM and GDN caches have a fixed size, so their step
time must not grow with the context.
"""

from __future__ import annotations

import functools
import statistics
import time
from typing import Any

import jax
import jax.numpy as jnp

from sdm_jax.evaluation import timing
from sdm_jax.models.config import LMConfig
from sdm_jax.models.generate import LMDecoder, decode_tokens, dense_kernels_in
from sdm_jax.models.lm import LM
from sdm_jax.models.mixers import MIXERS


SCAN_STEPS = 32


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
                repeats: int, top_ops: int = 0, cast_kernels: bool = True) -> dict[str, Any]:
  """The median ms of one decode step of `config`'s single layer (its mixer letter is the
  pattern) at `batch` sequences after `context` tokens, over `repeats` steps after
  `warmup`, one jitted call per token (host dispatch included); "scan_step_ms": per token
  of SCAN_STEPS steps in one jitted `lax.scan` (as `generate` decodes, each step's output
  fed into the next step's input so none can be skipped), each call waited for;
  "scan_back_to_back_ms": the same with the calls issued back to back and waited for once
  (no host round trip between calls: how PyTorch's replayed CUDA graph is timed, and how a
  long `generate` runs); with the cache's bytes per
  sequence, and with `top_ops` > 0 the costliest device ops of a scanned step, per token
  (`timing.device_time_by_op`). `cast_kernels`: Dense kernels stored in the compute dtype,
  as `generate` decodes (`dense_kernels_in`); False keeps them float32."""
  if config.num_layers != 1:
    raise ValueError(f"LMConfig.num_layers must be 1 (one mixer layer is timed), got "
                     f"{config.num_layers}")
  kind = config.layer_kinds
  mixer = MIXERS[kind].build(config, "mixer")
  dtype = jnp.dtype(config.compute_dtype)
  x = jax.random.normal(jax.random.PRNGKey(1), (batch, 1, config.d_model), dtype)
  positions = jnp.full((batch, 1), context, jnp.int32)
  params = jax.jit(mixer.init)(jax.random.PRNGKey(0), x, positions)
  if cast_kernels:
    params = dense_kernels_in(params, dtype)
  cache_shapes = jax.eval_shape(
      lambda p: mixer.apply(p, x, jnp.zeros_like(positions), context, method="prefill")[1],
      params)
  cache = jax.jit(random_cache, static_argnums=1)(cache_shapes, context, jax.random.PRNGKey(2))
  cache_bytes = sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(cache))
  decode = lambda p, xt, pos, c: mixer.apply(p, xt, pos, c, method="decode")  # noqa: E731
  step = jax.jit(decode, donate_argnums=3)

  @functools.partial(jax.jit, donate_argnums=1)
  def scanned_steps(params, cache):  # as `generate` runs them: no host dispatch per token
    def one_token(carry, _):
      previous_y, layer_cache = carry
      y, layer_cache = decode(params, x + previous_y, positions, layer_cache)
      return (y.astype(x.dtype), layer_cache), None

    (y, cache), _ = jax.lax.scan(one_token, (jnp.zeros_like(x), cache), None,
                                 length=SCAN_STEPS)
    return y, cache

  for _ in range(warmup):
    y, cache = step(params, x, positions, cache)
  jax.block_until_ready(cache)
  samples = []
  for _ in range(repeats):
    start = time.perf_counter()
    y, cache = step(params, x, positions, cache)
    jax.block_until_ready((y, cache))
    samples.append((time.perf_counter() - start) * 1e3)
  # The scanned calls take the donated cache each previous call returned.
  state = {"cache": cache}

  def scan_call():
    y, state["cache"] = scanned_steps(params, state["cache"])
    return y, state["cache"]

  scan = timing.time_call(scan_call, warmup=1, repeats=4)  # the warm-up call compiles
  result = {"mixer": kind, "batch": batch, "context": context, "cast_kernels": cast_kernels,
            "step_ms": statistics.median(samples), "min_ms": min(samples),
            "scan_step_ms": scan["median_ms"] / SCAN_STEPS,
            "scan_back_to_back_ms": scan["back_to_back_ms"] / SCAN_STEPS,
            "cache_bytes_per_sequence": cache_bytes // batch}
  if top_ops:
    # The scanned steps are profiled (the per-call step is another module with other
    # fusions and launches), per token: each row's ms and count over SCAN_STEPS.
    result["top_ops"] = [{**row, "ms": row["ms"] / SCAN_STEPS, "count": row["count"] / SCAN_STEPS}
                         for row in timing.device_time_by_op(scan_call, top=top_ops)]
  return result


def time_generation(config: LMConfig, batch: int, context: int, *, steps: int = 64,
                    repeats: int = 3, cast_kernels: bool = True) -> dict[str, Any]:
  """Whole-model decoding speed: `steps` greedy tokens in one jitted `lax.scan` (what
  `generate` runs after the prompt) at `batch` sequences whose caches hold `context` tokens
  (random values, every attention slot valid; prefill is not timed). Returns the median
  over `repeats` runs after one warm-up, as tokens/s over the batch and ms per step."""
  model = LM(config)
  decoder = LMDecoder(model)
  prompt = jnp.zeros((batch, 1), jnp.int32)
  params = jax.jit(model.init)(jax.random.PRNGKey(0), prompt)
  if cast_kernels:  # as `generate` does
    params = dense_kernels_in(params, config.compute_dtype)
  cache_len = context + steps
  cache_shapes = jax.eval_shape(lambda p: decoder.prefill(p, prompt, cache_len)[1], params)
  caches = jax.jit(random_cache, static_argnums=1)(cache_shapes, context, jax.random.PRNGKey(2))
  token = jnp.zeros((batch,), jnp.int32)
  positions = context + jnp.arange(steps, dtype=jnp.int32)
  keys = jax.random.split(jax.random.PRNGKey(3), steps)
  samples = []
  for i in range(repeats + 1):
    start = time.perf_counter()
    tokens, token, caches = decode_tokens(decoder, params, token, caches, positions, keys,
                                          temperature=0.0, top_k=None)
    jax.block_until_ready((tokens, caches))
    if i:  # the first run compiles
      samples.append(time.perf_counter() - start)
  seconds = statistics.median(samples)
  return {"model_pattern": config.pattern, "num_layers": config.num_layers, "batch": batch,
          "context": context, "cast_kernels": cast_kernels, "steps": steps,
          "tokens_per_s": batch * steps / seconds,
          "step_ms": seconds / steps * 1e3}
