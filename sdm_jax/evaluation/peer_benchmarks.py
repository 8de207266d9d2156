"""Peers timed beside our ops in the same run and the same way (`timing.time_call`, waited
for per call and back to back): flash-linear-attention's chunked gated delta rule
(`--op=gdn_fla` of `experiments.bench_ops`), on the inputs our GDN benchmark draws; and
PyTorch's `scaled_dot_product_attention` decode step with its projections
(`experiments.bench_decode --sdpa_peer`), the peer of our full-attention decode.

PyTorch and fla are not dependencies of this library: they are imported here, on call, and
a missing one raises an ImportError saying what to install (fla: the `fla-core` and
`einops` wheels; on the lent H200, which has PyTorch and Triton but no registry, carry them
and install with `pip install --no-deps --target`, as WORKSPACE.md "Running" shows).
"""

from __future__ import annotations

import sys
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sdm_jax.evaluation import gdn_benchmarks
from sdm_jax.evaluation import timing
from sdm_jax.ops import gated_delta


def _progress(started: float, what: str) -> None:
  """One line on stderr: where a slow first call (fla autotunes each kernel) spends time."""
  print(f"[gdn_fla {time.perf_counter() - started:7.1f} s] {what}", file=sys.stderr,
        flush=True)


def _import_torch(what: str):
  try:
    import torch  # pylint: disable=import-outside-toplevel
  except ImportError as e:
    raise ImportError(f"{what} needs PyTorch with CUDA") from e
  return torch


def _synchronize(torch, device: str):
  """`timing.time_call`'s `sync` for PyTorch work on `device`: waits for the CUDA queue
  (work on the CPU is done when a call returns)."""
  if device.startswith("cuda"):
    return lambda _: torch.cuda.synchronize()
  return lambda _: None


def _cuda_time_by_kernel(torch, fn, *, repeats: int = 3, top: int = 20
                         ) -> list[dict[str, Any]]:
  """`timing.device_time_by_op` for PyTorch work: a `torch.profiler` trace of `repeats`
  calls of `fn`, CUDA kernel time summed per kernel name, rows {"op", "ms" and "count" (per
  call), "share" (of the trace's kernel time)}, costliest first."""
  fn()
  torch.cuda.synchronize()
  activities = [torch.profiler.ProfilerActivity.CUDA]
  with torch.profiler.profile(activities=activities) as profile:
    for _ in range(repeats):
      fn()
    torch.cuda.synchronize()
  # A kernel's own duration in microseconds (older PyTorch names it cuda_time_total).
  microseconds = lambda event: (event.device_time_total  # noqa: E731
                                if hasattr(event, "device_time_total")
                                else event.cuda_time_total)
  return timing.ranked_ops(
      ((event.name, microseconds(event) / 1e3) for event in profile.events()
       if event.device_type == torch.autograd.DeviceType.CUDA), repeats=repeats, top=top)


def _import_fla():
  torch = _import_torch("--op=gdn_fla")
  try:
    from fla.ops import gated_delta_rule as fla_gdn  # pylint: disable=import-outside-toplevel
    from fla.ops.common import chunk_o as fla_chunk_o  # pylint: disable=import-outside-toplevel
  except ImportError as e:
    raise ImportError("--op=gdn_fla needs flash-linear-attention: the fla-core and einops "
                      "wheels (pip install --no-deps fla-core einops)") from e
  return torch, fla_gdn.chunk_gated_delta_rule, fla_chunk_o


def _bypass_hopper_guard(fla_chunk_o) -> bool:
  """fla refuses its gated backward on Hopper with Triton in [3.4, 3.7.1) (wrong results
  there, fla issue 640); the guard reads one module flag. Setting it lets the backward run
  so that its time can be compared; its gradients are then not to be trusted. Returns
  whether the guard was bypassed."""
  if getattr(fla_chunk_o, "TRITON_ABOVE_3_7_1", True):
    return False
  fla_chunk_o.TRITON_ABOVE_3_7_1 = True
  return True


def benchmark_fla_gdn(*, batch, seq_len, heads, key_dim, value_dim, dtype, warmup, repeats,
                      chunk_size=64, top_ops=0) -> dict[str, Any]:
  """fla's `chunk_gated_delta_rule` forward and forward+backward (grads of sum(o) w.r.t.
  q, k, v, g, beta; final state returned, as ours), timed as `gdn_benchmarks.benchmark`
  times ours, on the same inputs (`gdn_benchmarks.make_inputs`, moved by DLPack).

  Also reports the largest difference between fla's o and ours (`impl="auto"`, chunk_size)
  relative to our largest entry: both compute the same rule on the same inputs. With
  `top_ops` > 0, "fwd_top_ops" and "fwd_bwd_top_ops": fla's costliest CUDA kernels per call
  (a `torch.profiler` trace; as `gdn_benchmarks.benchmark` lists ours).
  """
  started = time.perf_counter()
  torch, chunk_gated_delta_rule, fla_chunk_o = _import_fla()
  _progress(started, f"imported torch {torch.__version__} and fla")
  guard_bypassed = _bypass_hopper_guard(fla_chunk_o)
  inputs = gdn_benchmarks.make_inputs(0, batch=batch, seq_len=seq_len, heads=heads,
                                      key_dim=key_dim, value_dim=value_dim,
                                      dtype=jnp.dtype(dtype))
  q, k, v, g, beta = (torch.from_dlpack(x).clone().requires_grad_() for x in inputs)

  def forward():
    with torch.no_grad():
      return chunk_gated_delta_rule(q, k, v, g, beta, output_final_state=True)

  def forward_backward():
    o, _ = chunk_gated_delta_rule(q, k, v, g, beta, output_final_state=True)
    return torch.autograd.grad(o.float().sum(), (q, k, v, g, beta))

  sync = _synchronize(torch, "cuda")
  _progress(started, "inputs on the GPU; forward (the first call autotunes)")
  fwd = timing.time_call(forward, warmup=warmup, repeats=repeats, sync=sync)
  _progress(started, "forward timed; forward+backward (the backward autotunes)")
  fwd_bwd = timing.time_call(forward_backward, warmup=warmup, repeats=repeats, sync=sync)
  profiles = {}
  if top_ops:
    profiles = {"fwd_top_ops": _cuda_time_by_kernel(torch, forward, top=top_ops),
                "fwd_bwd_top_ops": _cuda_time_by_kernel(torch, forward_backward, top=top_ops)}
  _progress(started, "forward+backward timed; ours for the difference")
  ours = np.asarray(jax.jit(lambda *x: gated_delta.gated_delta_rule(
      *x, chunk_size=chunk_size))(*inputs)[0], np.float32)
  theirs = forward()[0].float().cpu().numpy()
  return {
      "peer": "fla chunk_gated_delta_rule",
      "batch": batch, "seq_len": seq_len, "heads": heads, "key_dim": key_dim,
      "value_dim": value_dim, "dtype": jnp.dtype(dtype).name,
      **gdn_benchmarks.timing_fields(fwd, fwd_bwd),
      "o_max_rel_difference_from_ours": float(np.abs(theirs - ours).max()
                                              / (np.abs(ours).max() + 1e-30)),
      "hopper_backward_guard_bypassed": guard_bypassed,
      "torch_version": torch.__version__,
      **profiles,
  }


def benchmark_sdpa_decode(*, batch: int, context: int, d_model: int, heads: int,
                          warmup: int, repeats: int, device: str = "cuda") -> dict[str, Any]:
  """One decode step of full attention in PyTorch, bf16: x [B, 1, d] -> q, k, v by one
  [d, 3d] projection, k and v written into a [B, H, L, D] cache (SDPA's layout) at slot
  context - 1 of a cache holding `context` tokens, `scaled_dot_product_attention` of the
  query over the whole cache, then the [d, d] output projection. What the issue's SDPA
  figures time, without rotary embeddings (ours has them).

  Timed per call (waited for) and back to back as `timing.time_call` times ours; on CUDA
  also as a replayed CUDA graph, the nearest to our steps inside one jitted scan (no host
  work per token). Returns milliseconds per step."""
  torch = _import_torch("--sdpa_peer")
  functional = torch.nn.functional
  head_dim = d_model // heads
  generator = torch.Generator(device=device).manual_seed(0)
  bf16 = torch.bfloat16

  def normal(*shape, scale=1.0):
    return (torch.randn(*shape, generator=generator, device=device) * scale).to(bf16)

  x = normal(batch, 1, d_model)
  w_qkv = normal(d_model, 3 * d_model, scale=d_model**-0.5)
  w_o = normal(d_model, d_model, scale=d_model**-0.5)
  k_cache = normal(batch, heads, context, head_dim)
  v_cache = normal(batch, heads, context, head_dim)
  slot = context - 1

  def step():
    q, k, v = (y.view(batch, 1, heads, head_dim).transpose(1, 2)
               for y in (x @ w_qkv).split(d_model, dim=-1))
    k_cache[:, :, slot:slot + 1] = k
    v_cache[:, :, slot:slot + 1] = v
    o = functional.scaled_dot_product_attention(q, k_cache, v_cache)
    return o.transpose(1, 2).reshape(batch, 1, d_model) @ w_o

  on_cuda = device.startswith("cuda")
  sync = _synchronize(torch, device)
  with torch.no_grad():
    measured = timing.time_call(step, warmup=warmup, repeats=repeats, sync=sync)
    result = {"peer": "torch scaled_dot_product_attention", "batch": batch,
              "context": context, "d_model": d_model, "heads": heads,
              "step_ms": measured["median_ms"], "min_ms": measured["min_ms"],
              "back_to_back_ms": measured["back_to_back_ms"],
              "cache_bytes_per_sequence": 2 * context * d_model * 2,
              "torch_version": torch.__version__}
    if on_cuda:
      stream = torch.cuda.Stream()
      stream.wait_stream(torch.cuda.current_stream())
      with torch.cuda.stream(stream):  # warm-up on a side stream, as graph capture asks
        step()
      torch.cuda.current_stream().wait_stream(stream)
      graph = torch.cuda.CUDAGraph()
      with torch.cuda.graph(graph):
        step()
      replayed = timing.time_call(graph.replay, warmup=warmup, repeats=repeats, sync=sync)
      result["cuda_graph_step_ms"] = replayed["back_to_back_ms"]
  return result
