"""Kernel launches written out so that one can be replayed alone, with no JAX in the process
(`experiments/replay_kernel.py`). Nsight Compute died at attach to a JAX process on the
H200 (WORKSPACE.md, issue 11, sessions 13-14), so the Pallas kernels have had no hardware
counters; a replay of one launch with the same cubin and operands can be profiled.

`record_launches` runs a function eagerly (`jax.disable_jit`, so that every launch sees
concrete operands) with `pallas_call` stood in for: a launch returns its in-place operands
unchanged and zeros for its other results, and no kernel runs (so this works on any
platform, and fast). The operands that set a launch's memory traffic and control flow
(slots, row tiles, segment bounds, tokens; the scores a top-k ranks) are the real ones.
What a stand-in leaves out are values that earlier launches would have written: in phase
2 the rows stay the initial table's and `next_write` stays -1, so the union backward's
read tiles load every row from the final table rather than some from later chunks'
snapshots (the same bytes, from another array).

Files, under `out_dir/<kernel name>/`: `launch.json` (grid, warps, and per parameter, in
the kernel's order (its inputs, then its outputs): name, shape, dtype, and either a raw
file of its bytes or the index of the input an in-place output shares) and one
`<index>.bin` per array.
"""

from __future__ import annotations

import collections
import json
import os
from typing import Any, Callable, Mapping
from unittest import mock

import jax
from jax.experimental import pallas as pl
import jax.numpy as jnp
import numpy as np

from pallas_kernels.product_key import topk_pallas
from pallas_kernels.sparse_delta import scan_pallas
from sdm_jax.evaluation import sdm_benchmarks

# Phase 2's launches that hold its time in `sdm_small`'s step (WORKSPACE.md, issue 11).
PHASE2_KERNELS = ("fwd_gather_kernel", "fwd_scatter_kernel", "bwd_gather_kernel",
                  "bwd_union_kernel")
_PHASE2_FORWARD = ("fwd_gather_kernel", "fwd_dense_kernel", "fwd_scatter_kernel")
_PHASE2_BACKWARD = ("bwd_gather_kernel", "bwd_dense_kernel", "bwd_union_kernel",
                    "bwd_written_kernel", "bwd_read_kernel")
TOPK_KERNEL = "product_key_topk_kernel"
# Triton's default, where a call names no warps.
_DEFAULT_WARPS = 4


def _grid3(grid) -> list[int]:
  grid = (grid,) if isinstance(grid, int) else tuple(grid)
  return [int(g) for g in grid] + [1] * (3 - len(grid))


def record_launches(fn: Callable[..., Any], args, wanted: Mapping[str, int]
                    ) -> dict[str, dict]:
  """{kernel name: launch} of the `wanted[name]`-th (from 0) `pallas_call` launch of each
  named kernel while fn(*args) runs eagerly with every launch stood in for (module
  docstring). A launch: kernel, grid (3 axes), num_warps, params: per parameter its name
  (the kernel's for inputs and outputs alike where the call names none: `in<i>`,
  `out<i>`), role, and its array, or for an in-place output the index of its input."""
  counts, recorded = collections.Counter(), {}

  def stand_in(kernel, *, out_shape, name=None, grid=(), input_output_aliases=None,
               compiler_params=None, **_):
    name = name or getattr(kernel, "__name__", "kernel")
    flat_out, tree = jax.tree.flatten(out_shape)
    input_of = {out: inp for inp, out in dict(input_output_aliases or {}).items()}

    def launch(*operands):
      occurrence, counts[name] = counts[name], counts[name] + 1
      results = [operands[input_of[i]] if i in input_of else jnp.zeros(out.shape, out.dtype)
                 for i, out in enumerate(flat_out)]
      if wanted.get(name) == occurrence:
        params = [dict(name=f"in{i}", role="in", array=np.asarray(x))
                  for i, x in enumerate(operands)]
        for i, out in enumerate(flat_out):
          if i in input_of:
            params.append(dict(name=f"out{i}", role="out", same_as=input_of[i],
                               shape=list(out.shape), dtype=jnp.dtype(out.dtype).name))
          else:
            params.append(dict(name=f"out{i}", role="out",
                               array=np.zeros(out.shape, out.dtype)))
        recorded[name] = dict(
            kernel=name, grid=_grid3(grid),
            num_warps=getattr(compiler_params, "num_warps", None) or _DEFAULT_WARPS,
            params=params)
      return jax.tree.unflatten(tree, results)

    return launch

  with jax.disable_jit(), mock.patch.object(pl, "pallas_call", stand_in):
    fn(*args)
  missing = {name: index for name, index in wanted.items() if name not in recorded}
  if missing:
    raise ValueError(f"no such launch: {missing} (launches seen: {dict(counts)})")
  return recorded


def record_phase2(*, batch: int, seq_len: int, slots: int, value_dim: int, writes: int,
                  reads: int, chunk_size: int, config: scan_pallas.KernelConfig | None = None,
                  kernels=PHASE2_KERNELS, chunk_index: int | None = None) -> dict[str, dict]:
  """The launches of `kernels` at chunk `chunk_index` (default: the middle one) of SDM phase
  2's forward and backward on `sdm_benchmarks.kernel_planner`'s inputs, those
  `experiments.kernel_programs.sdm_program` (the cubins' build) takes. Inputs carry their kernel's names (`scan_pallas`' operand names)."""
  unknown = set(kernels) - set(_PHASE2_FORWARD) - set(_PHASE2_BACKWARD)
  if unknown:
    raise ValueError(f"kernels must name phase 2's kernels {_PHASE2_FORWARD + _PHASE2_BACKWARD}"
                     f", got {sorted(unknown)}")
  inputs, plan_fn = sdm_benchmarks.kernel_planner(
      batch=batch, seq_len=seq_len, slots=slots, value_dim=value_dim, writes=writes,
      reads=reads, chunk_size=chunk_size)
  plan = jax.jit(plan_fn)(*inputs[1:])
  num_chunks = plan.ids.write_pos.shape[2]
  chunk_index = num_chunks // 2 if chunk_index is None else chunk_index
  if not 0 <= chunk_index < num_chunks:
    raise ValueError(f"chunk_index must be in [0, {num_chunks}), got {chunk_index}")
  out_cotangent = jax.random.normal(
      jax.random.PRNGKey(2), (*plan.ids.write_pos.shape[:3], *plan.coefs.values.shape[-2:]))

  def loss(memory, coefs):
    out, _ = scan_pallas.scan_chunks(memory, plan._replace(coefs=coefs), error="shared",
                                     config=config, interpret=False)
    return jnp.sum(out * out_cotangent)

  # The backward walks the chunks in reverse: its launch of chunk c is its n - 1 - c-th.
  wanted = {name: chunk_index if name in _PHASE2_FORWARD else num_chunks - 1 - chunk_index
            for name in kernels}
  names = {}
  with mock.patch.object(scan_pallas, "_call", _naming(scan_pallas._call, names)):
    launches = record_launches(jax.grad(loss, argnums=(0, 1)), (inputs.memory, plan.coefs),
                               wanted)
  for name, launch in launches.items():
    for param, param_name in zip(launch["params"], names[name]):
      param["name"] = param_name
  return launches


def _naming(call, names: dict):
  """`scan_pallas._call`, noting each kernel's parameter names (inputs, then outputs) in
  `names`."""
  def named_call(kernel, grid, chunk_index, inputs, outputs, aliases=(), **kw):
    names[kernel.__name__.strip("_")] = ["chunk", *inputs, *outputs]
    return call(kernel, grid, chunk_index, inputs, outputs, aliases, **kw)

  return named_call


def record_topk(*, rows: int, sub_keys: int, k: int,
                config: topk_pallas.KernelConfig | None = None) -> dict[str, dict]:
  """The product-key top-k kernel's launch on random normal float32 scores [rows, 2S]
  (as `experiments.kernel_programs.topk_program` builds it)."""
  scores = jax.random.normal(jax.random.PRNGKey(0), (rows, 2 * sub_keys), jnp.float32)
  return record_launches(
      lambda s: topk_pallas.product_key_topk(s, k, config=config, interpret=False),
      (scores,), {TOPK_KERNEL: 0})


def save(launch: dict[str, Any], out_dir: str) -> str:
  """Writes one recorded launch under out_dir/<kernel>/; returns that directory."""
  directory = os.path.join(out_dir, launch["kernel"])
  os.makedirs(directory, exist_ok=True)
  params = []
  for index, param in enumerate(launch["params"]):
    param = dict(param)
    array = param.pop("array", None)
    if array is not None:
      param.update(shape=list(array.shape), dtype=array.dtype.name, file=f"{index}.bin",
                   nbytes=int(array.nbytes))
      with open(os.path.join(directory, param["file"]), "wb") as f:
        f.write(np.ascontiguousarray(array).tobytes())
    params.append(param)
  with open(os.path.join(directory, "launch.json"), "w") as f:
    json.dump(dict(launch, params=params), f, indent=1)
  return directory


__all__ = ["PHASE2_KERNELS", "TOPK_KERNEL", "record_launches", "record_phase2",
           "record_topk", "save"]
