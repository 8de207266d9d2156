"""The operands of phase 2's kernels at one chunk, written out so that one launch can be
replayed alone, with no JAX in the process (`experiments/replay_kernel.py`). Nsight Compute
died at attach to a JAX process on the H200 (WORKSPACE.md, issue 11, sessions 13-14), so
the phase-2 kernels have had no hardware counters; a replay of one launch with the same
cubin and operands can be profiled.

`record` runs phase 2 forward and backward eagerly (`jax.disable_jit`, so that each
chunk's launches see concrete operands) with every kernel launch replaced by a stand-in
that returns its in-place operands unchanged and zeros for its other results: no kernel
runs, so this works on any platform and fast, and the operands that set each launch's
memory traffic (slots, row tiles, segment bounds, tokens) are the plan's own. What the
stand-ins leave out: values (the rows are the initial table's, the cotangents the given
ones) and `next_write` (-1 throughout, so the union backward's read tiles load every row
from the final table rather than some from later chunks' snapshots: the same bytes from
another array).

Files, under `out_dir/<kernel name>/`: `launch.json` (grid, warps, and per parameter, in
the kernel's order (its inputs, then its outputs): name, shape, dtype, and either a raw
file of its bytes or the index of the input an in-place output shares) and one
`<index>.bin` per array.
"""

from __future__ import annotations

import json
import os
from typing import Any
from unittest import mock

import jax
import jax.numpy as jnp
import numpy as np

from pallas_kernels.sparse_delta import scan_pallas
from sdm_jax.evaluation import sdm_benchmarks

# The launches that hold phase 2's time in `sdm_small`'s step (WORKSPACE.md, issue 11).
DEFAULT_KERNELS = ("fwd_gather_kernel", "fwd_scatter_kernel", "bwd_gather_kernel",
                   "bwd_union_kernel")


def _launch_name(kernel) -> str:
  """The name `scan_pallas._call` gives the kernel (profiles and cubins know it by it)."""
  return kernel.__name__.strip("_")


def _stand_in(kernels, chunk_index: int, recorded: dict):
  """A `scan_pallas._call` that records the operands of `kernels` at chunk `chunk_index`
  into `recorded` ({name: launch}) and launches nothing."""
  def call(kernel, grid, chunk, inputs: dict, outputs: dict, aliases=(), *, dims, config,
           interpret):
    del dims, interpret
    inputs = dict(chunk=jnp.reshape(chunk, (1,)).astype(jnp.int32), **inputs)
    results = {name: inputs[name] if name in aliases else jnp.zeros(out.shape, out.dtype)
               for name, out in outputs.items()}
    name = _launch_name(kernel)
    if name in kernels and int(chunk) == chunk_index:
      in_names = list(inputs)
      params = [dict(name=n, role="in", array=np.asarray(v)) for n, v in inputs.items()]
      for n, out in outputs.items():
        if n in aliases:
          params.append(dict(name=n, role="out", same_as=in_names.index(n),
                             shape=list(out.shape), dtype=jnp.dtype(out.dtype).name))
        else:
          params.append(dict(name=n, role="out", array=np.zeros(out.shape, out.dtype)))
      recorded[name] = dict(kernel=name, grid=list(grid), num_warps=config.num_warps,
                            params=params)
    return results

  return call


def record(*, batch: int, seq_len: int, heads: int, slots: int, value_dim: int, writes: int,
           reads: int, chunk_size: int, dtype: str, table_dtype: str,
           config: scan_pallas.KernelConfig | None = None,
           kernels=DEFAULT_KERNELS, chunk_index: int | None = None) -> dict[str, Any]:
  """{kernel name: launch} of `kernels` at chunk `chunk_index` (default: the middle one)
  of phase 2 (shared error form) on `sdm_benchmarks.make_inputs` inputs, forward and
  backward. A launch: kernel, grid, num_warps, params (see the module docstring)."""
  args = sdm_benchmarks.make_inputs(
      jax.random.PRNGKey(0), batch=batch, seq_len=seq_len, heads=heads, slots=slots,
      value_dim=value_dim, writes=writes, reads=reads, dtype=jnp.dtype(dtype),
      table_dtype=jnp.dtype(table_dtype))
  inputs, plan_fn = sdm_benchmarks.planner(args, chunk_size=chunk_size, error="shared",
                                           impl="pallas_gpu")
  plan = jax.jit(plan_fn)(*inputs[1:])
  num_chunks = plan.ids.write_pos.shape[2]
  chunk_index = num_chunks // 2 if chunk_index is None else chunk_index
  if not 0 <= chunk_index < num_chunks:
    raise ValueError(f"chunk_index must be in [0, {num_chunks}), got {chunk_index}")
  unknown = set(kernels) - set(DEFAULT_KERNELS) - {
      "fwd_dense_kernel", "bwd_dense_kernel", "bwd_written_kernel", "bwd_read_kernel"}
  if unknown:
    raise ValueError(f"kernels must name phase 2's kernels, got {sorted(unknown)}")
  out_cotangent = jax.random.normal(
      jax.random.PRNGKey(2), (*plan.ids.write_pos.shape[:3], *plan.coefs.values.shape[-2:]))

  def loss(memory, coefs):
    out, _ = scan_pallas.scan_chunks(memory, plan._replace(coefs=coefs), error="shared",
                                     config=config, interpret=False)
    return jnp.sum(out * out_cotangent)

  recorded = {}
  with jax.disable_jit(), mock.patch.object(
      scan_pallas, "_call", _stand_in(set(kernels), chunk_index, recorded)):
    jax.grad(loss, argnums=(0, 1))(inputs.memory, plan.coefs)
  missing = set(kernels) - set(recorded)
  if missing:
    raise ValueError(f"no launch of {sorted(missing)} at chunk {chunk_index} (the config "
                     f"runs other kernels: backward_rows={config and config.backward_rows})")
  return recorded


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


__all__ = ["DEFAULT_KERNELS", "record", "save"]
