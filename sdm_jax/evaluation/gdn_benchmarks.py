"""Times the Gated DeltaNet op (`--op=gdn` of `experiments.bench_ops`): forward and
forward+backward on inputs shaped as the GDN layer feeds them; `--op=gdn_tiling`: the
Pallas forward under several tilings (`chunk_pallas.KernelConfig`)."""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp

from pallas_kernels.gated_delta import chunk_pallas
from sdm_jax.evaluation import tiling
from sdm_jax.evaluation import timing
from sdm_jax.ops import gated_delta


@functools.partial(jax.jit, static_argnames=(
    "batch", "seq_len", "heads", "key_dim", "value_dim", "dtype"))
def make_inputs(seed, *, batch, seq_len, heads, key_dim, value_dim, dtype):
  """(q, k, v, g, beta) as a GDN layer feeds them: unit-norm q and k, g < 0, beta in (0, 1)."""
  # One draw, split along the last axis: a single RNG kernel to compile and run.
  noise = jax.random.normal(jax.random.key(seed),
                            (batch, seq_len, heads, 2 * key_dim + value_dim + 2))
  q, k, v, g, beta = jnp.split(
      noise, [key_dim, 2 * key_dim, 2 * key_dim + value_dim, 2 * key_dim + value_dim + 1],
      axis=-1)

  def unit(x):
    return x / jnp.linalg.norm(x, axis=-1, keepdims=True)

  q, k = unit(q), unit(k)
  g = jax.nn.log_sigmoid(g[..., 0] + 3.0)
  beta = jax.nn.sigmoid(beta[..., 0])
  return tuple(x.astype(dtype) for x in (q, k, v, g, beta))


def timing_fields(fwd: dict[str, float], fwd_bwd: dict[str, float]) -> dict[str, float]:
  """The forward's and forward+backward's `timing.time_call` results as a GDN benchmark
  reports them (ours and the peers', `peer_benchmarks`)."""
  return {"fwd_ms": fwd["median_ms"], "fwd_bwd_ms": fwd_bwd["median_ms"],
          "fwd_min_ms": fwd["min_ms"], "fwd_bwd_min_ms": fwd_bwd["min_ms"],
          "fwd_back_to_back_ms": fwd["back_to_back_ms"],
          "fwd_bwd_back_to_back_ms": fwd_bwd["back_to_back_ms"]}


def benchmark(*, batch, seq_len, heads, key_dim, value_dim, chunk_size, dtype, impl, warmup,
              repeats, state_pass=None, pallas_backward="pallas", top_ops=0
              ) -> dict[str, Any]:
  """Times gated_delta_rule forward and forward+backward (grads of sum(o) w.r.t. all inputs).

  state_pass: of the chunked path ("chunked"); None = what the op picks on this platform
  (`gated_delta.chunked_state_pass`). pallas_backward: `backward` of the Pallas
  path ("pallas_gpu"). `top_ops` > 0 adds the costliest device ops of each (a profiler
  trace; empty on CPU).
  """
  inputs = make_inputs(0, batch=batch, seq_len=seq_len, heads=heads, key_dim=key_dim,
                       value_dim=value_dim, dtype=jnp.dtype(dtype))
  resolved = gated_delta.resolve_impl(impl, *inputs[:3], chunk_size=chunk_size)
  if state_pass is None:
    state_pass = gated_delta.chunked_state_pass(*inputs[:3])
  if resolved == "chunked":
    def op(*inputs):
      return gated_delta.gated_delta_rule_chunked(*inputs, chunk_size=chunk_size,
                                                  state_pass=state_pass)
  elif resolved == "pallas_gpu":
    def op(*inputs):
      return gated_delta.gated_delta_rule_pallas(*inputs, chunk_size=chunk_size,
                                                 backward=pallas_backward)
  else:
    def op(*inputs):
      return gated_delta.gated_delta_rule(*inputs, chunk_size=chunk_size, impl=resolved)

  def loss(*inputs):
    return op(*inputs)[0].astype(jnp.float32).sum()

  forward = jax.jit(op)
  forward_backward = jax.jit(jax.value_and_grad(loss, argnums=tuple(range(5))))
  fwd = timing.time_call(lambda: forward(*inputs), warmup=warmup, repeats=repeats)
  fwd_bwd = timing.time_call(lambda: forward_backward(*inputs), warmup=warmup,
                             repeats=repeats)
  fwd_bwd_compiled = forward_backward.lower(*inputs).compile()  # memory plan and HLO
  result = {
      "impl": resolved,
      "state_pass": state_pass if resolved == "chunked" else None,
      "backward": pallas_backward if resolved == "pallas_gpu" else None,
      "batch": batch, "seq_len": seq_len, "heads": heads, "key_dim": key_dim,
      "value_dim": value_dim, "chunk_size": chunk_size, "dtype": jnp.dtype(dtype).name,
      **timing_fields(fwd, fwd_bwd),
      "peak_bytes": timing.peak_memory_bytes(),
      "fwd_bwd_temp_bytes": timing.compiled_temp_bytes(fwd_bwd_compiled),
  }
  if top_ops:  # each program's HLO names the sources the profiler leaves at the module
    result["fwd_top_ops"] = timing.device_time_by_op(
        lambda: forward(*inputs), top=top_ops,
        hlo_text=forward.lower(*inputs).compile().as_text())
    result["fwd_bwd_top_ops"] = timing.device_time_by_op(
        lambda: forward_backward(*inputs), top=top_ops, hlo_text=fwd_bwd_compiled.as_text())
  return result


def benchmark_tilings(*, tilings: list[str], batch: int, seq_len: int, heads: int,
                      key_dim: int, value_dim: int, chunk_size: int, dtype: str,
                      pallas_backward: str = "pallas", warmup: int = 2,
                      repeats: int = 10) -> dict[str, Any]:
  """Median ms of the Pallas path (`gated_delta_rule_pallas`) for each tiling ("default" or
  "field=value;..." over `chunk_pallas.KernelConfig`): the forward, and with
  pallas_backward="pallas" the forward+backward by the backward kernels too (with the
  chunked backward, gradients do not depend on the tiling). Each result has its largest
  difference in o and the final state from the first tiling's (relative to its largest
  entry)."""
  inputs = make_inputs(0, batch=batch, seq_len=seq_len, heads=heads, key_dim=key_dim,
                       value_dim=value_dim, dtype=jnp.dtype(dtype))
  results, first = [], None
  for spec in tilings:
    config = tiling.parse_tiling(spec, chunk_pallas.default_config(value_dim, dtype))
    reason = chunk_pallas.config_limits(config, value_dim)
    if reason:
      raise ValueError(f"tiling {spec!r}: {reason}")
    op = functools.partial(gated_delta.gated_delta_rule_pallas, chunk_size=chunk_size,
                           config=config, backward=pallas_backward)
    forward = jax.jit(op)
    outputs = [x.astype(jnp.float32) for x in forward(*inputs)]
    first = first or outputs
    difference = max(float(jnp.max(jnp.abs(a - b)) / (jnp.max(jnp.abs(b)) + 1e-30))
                     for a, b in zip(outputs, first))
    measured = timing.time_call(lambda: forward(*inputs), warmup=warmup, repeats=repeats)
    result = {"tiling": spec, **config._asdict(), "fwd_ms": measured["median_ms"],
              "fwd_min_ms": measured["min_ms"], "max_rel_difference": difference}
    if pallas_backward == "pallas":
      forward_backward = jax.jit(jax.value_and_grad(
          lambda *x, op=op: op(*x)[0].astype(jnp.float32).sum(), argnums=tuple(range(5))))
      measured = timing.time_call(lambda: forward_backward(*inputs), warmup=warmup,
                                  repeats=repeats)
      result.update(fwd_bwd_ms=measured["median_ms"], fwd_bwd_min_ms=measured["min_ms"])
    results.append(result)
  return {"batch": batch, "seq_len": seq_len, "heads": heads, "key_dim": key_dim,
          "value_dim": value_dim, "chunk_size": chunk_size, "dtype": jnp.dtype(dtype).name,
          "backward": pallas_backward, "results": results}
