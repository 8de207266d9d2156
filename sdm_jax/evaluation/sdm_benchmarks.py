"""Times Sparse Delta Memory: the memory op alone (`--op=sdm`) and the whole layer
(`--op=sdm_layer`: projections, product-key top-k, op, output gate, as the authors' layer).

Op inputs are what the SDM layer feeds it: ids from product-key top-k of random scores (so
distinct within a token), softmax weights, values in `dtype`, a table per sequence
[B, H, N, Dv] in `table_dtype`. Registered in `experiments/bench_ops.py`.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import jax
import jax.numpy as jnp

from sdm_jax.evaluation import tiling
from sdm_jax.evaluation import timing
from pallas_kernels.sparse_delta import scan_pallas
from sdm_jax.layers.sparse_delta_memory import SparseDeltaMemory
from sdm_jax.ops import product_key_topk
from sdm_jax.ops import sparse_delta_rule
from sdm_jax.ops.sparse_delta import checks
from sdm_jax.ops.sparse_delta import chunk
from sdm_jax.ops.sparse_delta import resolve_impl


def make_inputs(key, *, batch, seq_len, heads, slots, value_dim, writes, reads, dtype,
                table_dtype=jnp.float32):
  """Positional arguments of `sparse_delta_rule` (a table per sequence in table_dtype)."""
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
    memory = (memory * value_dim**-0.5).astype(table_dtype)
    return (memory, write_idx, jax.nn.softmax(write_logits).astype(dtype), v, beta, g,
            read_idx, jax.nn.softmax(read_logits).astype(dtype))

  return make(keys)


def _timed(fn, args, warmup, repeats, top_ops=0) -> dict[str, Any]:
  jitted = jax.jit(fn)
  compiled = jitted.lower(*args).compile()  # its memory plan, and its HLO for the profile
  result = {"compiled_temp_bytes": timing.compiled_temp_bytes(compiled)}
  measured = timing.time_call(lambda: jitted(*args), warmup=warmup, repeats=repeats)
  result["ms"] = measured["median_ms"]
  result["peak_bytes"] = timing.peak_memory_bytes()
  if top_ops:
    result["top_ops"] = timing.device_time_by_op(lambda: jitted(*args), top=top_ops,
                                                 hlo_text=compiled.as_text())
  return result


def benchmark(*, batch: int, seq_len: int, heads: int, slots: int, value_dim: int,
              writes: int, reads: int, chunk_size: int, dtype: str, impl: str,
              error: str = "shared", table_dtype: str = "float32", warmup: int = 2,
              repeats: int = 10, phases: bool = True, top_ops: int = 0) -> dict[str, Any]:
  """Median ms and memory of forward, forward+backward and phase 1 / phase 2 alone.

  `peak_bytes` is the device's peak since start-up, so each stage's figure includes the
  stages before it (they run in the order listed). `top_ops` > 0 adds the forward's and
  forward+backward's costliest device ops (`timing.device_time_by_op`).
  """
  dtype = jnp.dtype(dtype)
  table_dtype = jnp.dtype(table_dtype)
  args = make_inputs(jax.random.PRNGKey(0), batch=batch, seq_len=seq_len, heads=heads,
                     slots=slots, value_dim=value_dim, writes=writes, reads=reads,
                     dtype=dtype, table_dtype=table_dtype)
  out_cotangent = jax.random.normal(jax.random.PRNGKey(1), args[3].shape, dtype)
  impl = resolve_impl(impl, args[0], args[3], chunk_size=chunk_size)
  op = functools.partial(sparse_delta_rule, chunk_size=chunk_size, error=error, impl=impl)
  table_bytes = batch * heads * slots * value_dim * table_dtype.itemsize
  result: dict[str, Any] = {
      "batch": batch, "seq_len": seq_len, "heads": heads, "slots": slots,
      "value_dim": value_dim, "writes": writes, "reads": reads, "chunk_size": chunk_size,
      "dtype": dtype.name, "table_dtype": table_dtype.name, "impl": impl, "error": error,
      "table_bytes": table_bytes,
  }

  forward = _timed(lambda *a: op(*a), args, warmup, repeats, top_ops)
  result.update(fwd_ms=forward["ms"], fwd_peak_bytes=forward["peak_bytes"],
                fwd_compiled_temp_bytes=forward["compiled_temp_bytes"])

  # Gradients w.r.t. the table, both weights, v, beta and g (not the final table).
  def loss(memory, write_w, v, beta, g, read_w, write_idx, read_idx):
    out, _ = op(memory, write_idx, write_w, v, beta, g, read_idx, read_w)
    return jnp.sum(out.astype(jnp.float32) * out_cotangent.astype(jnp.float32))

  memory, write_idx, write_w, v, beta, g, read_idx, read_w = args
  grad_args = (memory, write_w, v, beta, g, read_w, write_idx, read_idx)
  backward = _timed(jax.grad(loss, argnums=tuple(range(6))), grad_args, warmup, repeats,
                    top_ops)
  result.update(fwd_bwd_ms=backward["ms"], fwd_bwd_peak_bytes=backward["peak_bytes"],
                fwd_bwd_compiled_temp_bytes=backward["compiled_temp_bytes"])
  if top_ops:
    result.update(fwd_top_ops=forward["top_ops"], fwd_bwd_top_ops=backward["top_ops"])

  if phases and impl in chunk.PHASE2:
    result.update(_phase_timings(args, chunk_size=chunk_size, error=error, impl=impl,
                                 warmup=warmup, repeats=repeats))
  return result


def planner(args, *, chunk_size, error, impl):
  """(canonical inputs, plan_fn): plan_fn(*inputs[1:]) is phase 1 as the op runs it for
  `impl` (a key of `chunk.PHASE2`; the kernels' chunk length is not shortened)."""
  inputs, _ = checks.canonicalize_inputs(*args, time_axis=True)
  if impl != "chunked":
    chunk_size = chunk.kernel_chunk(chunk_size, inputs.v.shape[1])
  plan_fn = lambda *token_arrays: chunk.plan_chunks(  # noqa: E731
      *token_arrays, num_slots=inputs.memory.shape[2], chunk_size=chunk_size, error=error,
      shorten=impl == "chunked")
  return inputs, plan_fn


def kernel_planner(*, batch: int, seq_len: int, slots: int, value_dim: int, writes: int,
                   reads: int, chunk_size: int):
  """`planner` for the Pallas kernels (shared error form) on the inputs their static builds
  and recorded launches use: `make_inputs` at PRNGKey(0), one head, bf16 activations and
  table."""
  args = make_inputs(jax.random.PRNGKey(0), batch=batch, seq_len=seq_len, heads=1,
                     slots=slots, value_dim=value_dim, writes=writes, reads=reads,
                     dtype=jnp.bfloat16, table_dtype=jnp.bfloat16)
  return planner(args, chunk_size=chunk_size, error="shared", impl="pallas_gpu")


def _phase_timings(args, *, chunk_size, error, impl, warmup, repeats) -> dict[str, float]:
  """Phase 1 (table-independent plan, all chunks at once) and phase 2 (scan over chunks)."""
  inputs, plan_fn = planner(args, chunk_size=chunk_size, error=error, impl=impl)
  scan = chunk.PHASE2[impl]
  plan = jax.jit(plan_fn)(*inputs[1:])
  out_shape = jax.eval_shape(lambda m, p: scan(m, p, error=error), inputs.memory, plan)[0]
  out_cotangent = jax.random.normal(jax.random.PRNGKey(2), out_shape.shape, out_shape.dtype)

  # Integer arrays are arguments, not closed-over constants: XLA would constant-fold the
  # plan's sorts at compile time (minutes) and time a different program.
  def plan_loss(write_w, v, beta, g, read_w, write_idx, read_idx):
    coefs = plan_fn(write_idx, write_w, v, beta, g, read_idx, read_w).coefs
    return sum(jnp.sum(x) for x in jax.tree.leaves(coefs))

  def scan_loss(memory, coefs, ids):
    out, _ = scan(memory, plan._replace(ids=ids, coefs=coefs), error=error)
    return jnp.sum(out * out_cotangent)

  token_args = (inputs.write_w, inputs.v, inputs.beta, inputs.g, inputs.read_w,
                inputs.write_idx, inputs.read_idx)
  timings = {
      "phase1_fwd_ms": _timed(plan_fn, tuple(inputs[1:]), warmup, repeats)["ms"],
      "phase2_fwd_ms": _timed(lambda m, p: scan(m, p, error=error),
                              (inputs.memory, plan), warmup, repeats)["ms"],
      "phase1_fwd_bwd_ms": _timed(jax.grad(plan_loss, argnums=tuple(range(5))),
                                  token_args, warmup, repeats)["ms"],
      "phase2_fwd_bwd_ms": _timed(jax.grad(scan_loss, argnums=(0, 1)),
                                  (inputs.memory, plan.coefs, plan.ids), warmup, repeats)["ms"],
  }
  return timings


def benchmark_layer(*, batch: int, seq_len: int, model_dim: int, heads: int, slots: int,
                    writes: int, reads: int, chunk_size: int, dtype: str, impl: str,
                    error: str = "shared", table_dtype: str | None = None,
                    topk_impl: str = "auto", warmup: int = 2, repeats: int = 10,
                    top_ops: int = 0) -> dict[str, Any]:
  """Median ms of the SDM layer's forward and forward+backward (gradients w.r.t. every
  parameter, M0 included, and the input), with the device's peak memory after each.

  x [B, T, d] in `dtype` (the activations); parameters float32; the table in
  `table_dtype` (None: the layer's default). Run one configuration per process for a
  clean peak. `top_ops` > 0 adds the costliest device ops, as in `benchmark`.
  """
  dtype = jnp.dtype(dtype)
  layer = SparseDeltaMemory(model_dim=model_dim, num_heads=heads, num_slots=slots,
                            num_writes=writes, num_reads=reads, error=error,
                            chunk_size=chunk_size, impl=impl, topk_impl=topk_impl,
                            memory_dtype=table_dtype, dtype=dtype)
  x = jax.random.normal(jax.random.PRNGKey(0), (batch, seq_len, model_dim), dtype)
  positions = jnp.arange(seq_len)
  params = jax.jit(layer.init)(jax.random.PRNGKey(1), x, positions)
  out_cotangent = jax.random.normal(jax.random.PRNGKey(2), x.shape, dtype)
  value_dim = model_dim // heads
  resolved = resolve_impl(impl, jax.ShapeDtypeStruct((heads, slots, value_dim),
                                                     layer.table_dtype),
                          jax.ShapeDtypeStruct((batch, seq_len, heads, value_dim), dtype),
                          chunk_size=chunk_size)
  result: dict[str, Any] = {
      "batch": batch, "seq_len": seq_len, "model_dim": model_dim, "heads": heads,
      "slots": slots, "writes": writes, "reads": reads, "chunk_size": chunk_size,
      "dtype": dtype.name, "table_dtype": jnp.dtype(layer.table_dtype).name,
      "impl": resolved, "topk_impl": topk_impl, "error": error,
      "params": sum(int(p.size) for p in jax.tree.leaves(params)),
  }
  forward = _timed(lambda p, x: layer.apply(p, x, positions), (params, x), warmup, repeats,
                   top_ops)
  result.update(fwd_ms=forward["ms"], fwd_peak_bytes=forward["peak_bytes"])

  def loss(params, x):
    y = layer.apply(params, x, positions)
    return jnp.sum(y.astype(jnp.float32) * out_cotangent.astype(jnp.float32))

  backward = _timed(jax.grad(loss, argnums=(0, 1)), (params, x), warmup, repeats, top_ops)
  result.update(fwd_bwd_ms=backward["ms"], fwd_bwd_peak_bytes=backward["peak_bytes"],
                fwd_bwd_compiled_temp_bytes=backward["compiled_temp_bytes"])
  if top_ops:
    result.update(fwd_top_ops=forward["top_ops"], fwd_bwd_top_ops=backward["top_ops"])
  return result


def parse_tiling(spec: str, value_dim: int) -> scan_pallas.KernelConfig:
  """"default" (what the op uses for this Dv) or "field=value;field=value" overriding
  those fields of `scan_pallas.KernelConfig`."""
  config = tiling.parse_tiling(spec, scan_pallas.default_config(value_dim))
  scan_pallas.check_config(config, value_dim)
  return config


def benchmark_tilings(*, tilings: list[str], batch: int, seq_len: int, heads: int,
                      slots: int, value_dim: int, writes: int, reads: int, chunk_size: int,
                      dtype: str, table_dtype: str = "bfloat16", warmup: int = 2,
                      repeats: int = 10) -> dict[str, Any]:
  """Median ms of the Pallas phase 2 forward+backward (shared form) for each tiling, on one
  plan, with each result's largest gradient difference from the first tiling's
  (relative to that gradient's largest entry)."""
  dtype, table_dtype = jnp.dtype(dtype), jnp.dtype(table_dtype)
  args = make_inputs(jax.random.PRNGKey(0), batch=batch, seq_len=seq_len, heads=heads,
                     slots=slots, value_dim=value_dim, writes=writes, reads=reads,
                     dtype=dtype, table_dtype=table_dtype)
  inputs, plan_fn = planner(args, chunk_size=chunk_size, error="shared", impl="pallas_gpu")
  plan = jax.jit(plan_fn)(*inputs[1:])
  out_cotangent = jax.random.normal(
      jax.random.PRNGKey(2), (*plan.ids.write_pos.shape[:3], *plan.coefs.values.shape[-2:]))
  results, first = [], None
  for spec in tilings:
    config = parse_tiling(spec, value_dim)

    def loss(memory, coefs, ids, config=config):
      out, _ = scan_pallas.scan_chunks(memory, plan._replace(ids=ids, coefs=coefs),
                                       error="shared", config=config)
      return jnp.sum(out * out_cotangent)

    grad = jax.jit(jax.grad(loss, argnums=(0, 1)))
    grads = [x.astype(jnp.float32) for x in jax.tree.leaves(
        grad(inputs.memory, plan.coefs, plan.ids))]
    first = first or grads
    difference = max(float(jnp.max(jnp.abs(a - b)) / (jnp.max(jnp.abs(b)) + 1e-30))
                     for a, b in zip(grads, first))
    measured = timing.time_call(lambda: grad(inputs.memory, plan.coefs, plan.ids),
                                warmup=warmup, repeats=repeats)
    results.append({"tiling": spec, **config._asdict(),
                    "phase2_fwd_bwd_ms": measured["median_ms"],
                    "max_rel_grad_difference": difference})
  return {"batch": batch, "seq_len": seq_len, "heads": heads, "slots": slots,
          "value_dim": value_dim, "writes": writes, "reads": reads,
          "chunk_size": plan.coefs.values.shape[-2],  # the kernels' chunk length
          "dtype": dtype.name, "table_dtype": table_dtype.name, "results": results}
