"""Times the sparse delta rule (SDM's memory op): forward, forward+backward, and its phases.

Inputs are what the SDM layer feeds it: ids from product-key top-k of random scores (so
distinct within a token), softmax weights, values in `dtype`, a float32 table per
sequence [B, H, N, Dv]. Registered as `--op=sdm` in `experiments/bench_ops.py`.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import jax
import jax.numpy as jnp

from experiments import benchmarking
from sdm_jax.ops import product_key_topk
from sdm_jax.ops import sparse_delta_rule
from sdm_jax.ops.sparse_delta import checks
from sdm_jax.ops.sparse_delta import chunk


def make_inputs(key, *, batch, seq_len, heads, slots, value_dim, writes, reads, dtype):
  """Positional arguments of `sparse_delta_rule` (the table float32, per sequence)."""
  sub_keys = math.isqrt(slots)
  if sub_keys * sub_keys != slots:
    raise ValueError(f"slots must be a perfect square (product keys), got {slots}")
  keys = jax.random.split(key, 8)
  tok = (batch, seq_len, heads)

  @jax.jit
  def make(keys):
    write_idx, write_logits = product_key_topk(
        jax.random.normal(keys[0], (*tok, 2 * sub_keys)), writes)
    read_idx, read_logits = product_key_topk(
        jax.random.normal(keys[1], (*tok, 2 * sub_keys)), reads)
    v = jax.random.normal(keys[2], (*tok, value_dim), dtype)
    beta = jax.nn.sigmoid(jax.random.normal(keys[3], tok)).astype(dtype)
    # log alpha of the layer: -A * softplus(.) with A in [1, 16].
    g = (-jax.random.uniform(keys[4], tok, minval=1.0, maxval=16.0)
         * jax.nn.softplus(jax.random.normal(keys[5], tok) - 4.0)).astype(dtype)
    memory = jax.random.normal(keys[6], (batch, heads, slots, value_dim), jnp.float32)
    memory = memory * value_dim**-0.5
    return (memory, write_idx, jax.nn.softmax(write_logits).astype(dtype), v, beta, g,
            read_idx, jax.nn.softmax(read_logits).astype(dtype))

  return make(keys)


def _timed(fn, args, warmup, repeats) -> dict[str, Any]:
  jitted = jax.jit(fn)
  result = {"compiled_temp_bytes": benchmarking.compiled_temp_bytes(jitted, *args)}
  timing = benchmarking.time_call(lambda: jitted(*args), warmup=warmup, repeats=repeats)
  result["ms"] = timing["median_ms"]
  result["peak_bytes"] = benchmarking.peak_memory_bytes()
  return result


def benchmark(*, batch: int, seq_len: int, heads: int, slots: int, value_dim: int,
              writes: int, reads: int, chunk_size: int, dtype: str, impl: str,
              error: str = "shared", warmup: int = 2, repeats: int = 10,
              phases: bool = True) -> dict[str, Any]:
  """Median ms and memory of forward, forward+backward and (chunked) phase 1 / phase 2.

  `peak_bytes` is the device's peak since start-up, so each stage's figure includes the
  stages before it (they run in the order listed).
  """
  dtype = jnp.dtype(dtype)
  args = make_inputs(jax.random.PRNGKey(0), batch=batch, seq_len=seq_len, heads=heads,
                     slots=slots, value_dim=value_dim, writes=writes, reads=reads,
                     dtype=dtype)
  out_cotangent = jax.random.normal(jax.random.PRNGKey(1), args[3].shape, dtype)
  op = functools.partial(sparse_delta_rule, chunk_size=chunk_size, error=error, impl=impl)
  table_bytes = batch * heads * slots * value_dim * 4
  result: dict[str, Any] = {
      "batch": batch, "seq_len": seq_len, "heads": heads, "slots": slots,
      "value_dim": value_dim, "writes": writes, "reads": reads, "chunk_size": chunk_size,
      "dtype": dtype.name, "impl": impl, "error": error, "table_bytes": table_bytes,
  }

  forward = _timed(lambda *a: op(*a), args, warmup, repeats)
  result.update(fwd_ms=forward["ms"], fwd_peak_bytes=forward["peak_bytes"],
                fwd_compiled_temp_bytes=forward["compiled_temp_bytes"])

  # Gradients w.r.t. the table, both weights, v, beta and g (not the final table).
  def loss(memory, write_w, v, beta, g, read_w, write_idx, read_idx):
    out, _ = op(memory, write_idx, write_w, v, beta, g, read_idx, read_w)
    return jnp.sum(out.astype(jnp.float32) * out_cotangent.astype(jnp.float32))

  memory, write_idx, write_w, v, beta, g, read_idx, read_w = args
  grad_args = (memory, write_w, v, beta, g, read_w, write_idx, read_idx)
  backward = _timed(jax.grad(loss, argnums=tuple(range(6))), grad_args, warmup, repeats)
  result.update(fwd_bwd_ms=backward["ms"], fwd_bwd_peak_bytes=backward["peak_bytes"],
                fwd_bwd_compiled_temp_bytes=backward["compiled_temp_bytes"])

  if phases and impl in ("auto", "chunked"):
    result.update(_phase_timings(args, chunk_size=chunk_size, error=error, warmup=warmup,
                                 repeats=repeats))
  return result


def _phase_timings(args, *, chunk_size, error, warmup, repeats) -> dict[str, float]:
  """Phase 1 (table-independent plan, all chunks at once) and phase 2 (scan over chunks)."""
  inputs, _ = checks.canonicalize_inputs(*args, time_axis=True)
  num_slots = inputs.memory.shape[2]
  plan_fn = lambda *token_arrays: chunk.plan_chunks(
      *token_arrays, num_slots=num_slots, chunk_size=chunk_size, error=error)
  plan = jax.jit(plan_fn)(*inputs[1:])
  out_shape = jax.eval_shape(lambda m, p: chunk.scan_chunks(m, p, error=error),
                             inputs.memory, plan)[0]
  out_cotangent = jax.random.normal(jax.random.PRNGKey(2), out_shape.shape, out_shape.dtype)

  def plan_loss(*token_floats):
    write_w, v, beta, g, read_w = token_floats
    coefs = plan_fn(inputs.write_idx, write_w, v, beta, g, inputs.read_idx, read_w).coefs
    return sum(jnp.sum(x) for x in jax.tree.leaves(coefs))

  def scan_loss(memory, coefs):
    out, _ = chunk.scan_chunks(memory, plan._replace(coefs=coefs), error=error)
    return jnp.sum(out * out_cotangent)

  token_floats = (inputs.write_w, inputs.v, inputs.beta, inputs.g, inputs.read_w)
  timings = {
      "phase1_fwd_ms": _timed(plan_fn, tuple(inputs[1:]), warmup, repeats)["ms"],
      "phase2_fwd_ms": _timed(lambda m, p: chunk.scan_chunks(m, p, error=error),
                              (inputs.memory, plan), warmup, repeats)["ms"],
      "phase1_fwd_bwd_ms": _timed(jax.grad(plan_loss, argnums=tuple(range(5))),
                                  token_floats, warmup, repeats)["ms"],
      "phase2_fwd_bwd_ms": _timed(jax.grad(scan_loss, argnums=(0, 1)),
                                  (inputs.memory, plan.coefs), warmup, repeats)["ms"],
  }
  return timings
