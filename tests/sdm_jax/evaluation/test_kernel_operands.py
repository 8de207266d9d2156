"""Kernel launches recorded for a replay without JAX (one chunk's of phase 2, the top-k's):
the operands of the kernels' own launches, in their order, with the in-place ones shared."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from experiments import kernel_programs
from pallas_kernels.product_key import topk_pallas
from pallas_kernels.sparse_delta import scan_pallas
from sdm_jax.evaluation import kernel_operands
from tests.pallas_kernels.pallas_calls import pallas_calls

SHAPES = dict(batch=2, seq_len=48, slots=64, value_dim=64, writes=4, reads=4, chunk_size=16)
CHUNK = 1  # of 3


@pytest.fixture(scope="module")
def launches():
  return kernel_operands.record_phase2(**SHAPES, chunk_index=CHUNK)


def _own_launches(program):
  """{kernel name: its pallas_call equation} of a `kernel_programs` program as traced for a
  GPU (the program the cubins are built from)."""
  with kernel_programs.as_on_gpu():
    jaxpr = jax.make_jaxpr(program.fn)(*program.args)
  return {eqn.params["jaxpr"].debug_info.func_name: eqn for eqn in pallas_calls(jaxpr.jaxpr)}


def _param_aval(param):
  if "array" in param:
    return tuple(param["array"].shape), np.dtype(param["array"].dtype)
  return tuple(param["shape"]), np.dtype(jax.numpy.dtype(param["dtype"]))


def _check_against_own_launches(launches, program):
  own = _own_launches(program)
  for name, launch in launches.items():
    eqn = own[name]
    expected = [(tuple(v.aval.shape), np.dtype(v.aval.dtype))
                for v in [*eqn.invars, *eqn.outvars]]
    assert [_param_aval(p) for p in launch["params"]] == expected, name
    grid = list(eqn.params["grid_mapping"].grid)
    assert launch["grid"] == grid + [1] * (3 - len(grid)), name  # CUDA's x, y, z
    assert launch["num_warps"] == eqn.params["compiler_params"].num_warps, name
    # Each in-place output shares the input the kernel aliases it to, and only those do.
    num_inputs = len(eqn.invars)
    shared = {p["same_as"]: i for i, p in enumerate(launch["params"][num_inputs:])
              if "same_as" in p}
    assert shared == dict(eqn.params["input_output_aliases"]), name


def test_phase2_launches_have_their_kernels_operands_in_order(launches):
  assert set(launches) == set(kernel_operands.PHASE2_KERNELS)
  _check_against_own_launches(launches, kernel_programs.sdm_program(
      **SHAPES, config=scan_pallas.default_config(64)))
  union = [p["name"] for p in launches["bwd_union_kernel"]["params"]]
  assert union[:3] == ["chunk", "next_write", "d_table"] and union[-1] == "d_entry_read_coef"


def test_topk_launch_has_its_kernels_operands_in_order():
  shape = dict(rows=8, sub_keys=16, k=8)
  launches = kernel_operands.record_topk(**shape)
  assert list(launches) == [kernel_operands.TOPK_KERNEL]
  _check_against_own_launches(launches, kernel_programs.topk_program(
      **shape, config=topk_pallas.default_config(16, 8)))


def test_the_recorded_launch_is_the_chunks(launches):
  for launch in launches.values():  # the forward's and the backward's (in reverse) alike
    chunk = launch["params"][0]
    assert chunk["name"] == "chunk" and chunk["array"].tolist() == [CHUNK]
  # The plan's operands are the plan's, not zeros: the union's row tiles hold slots.
  union = {p["name"]: p for p in launches["bwd_union_kernel"]["params"] if "array" in p}
  slots = union["write_tile_slot"]["array"][CHUNK]
  assert np.any(slots < SHAPES["slots"])


def test_rejects_kernels_it_cannot_record_and_launches_that_do_not_happen():
  with pytest.raises(ValueError, match="kernels must name"):
    kernel_operands.record_phase2(**SHAPES, kernels=("topk_kernel",))
  with pytest.raises(ValueError, match=r"chunk_index must be in \[0, 3\)"):
    kernel_operands.record_phase2(**SHAPES, chunk_index=3)
  scores = jax.numpy.zeros((4, 8))
  with pytest.raises(ValueError, match="no such launch"):
    kernel_operands.record_launches(
        lambda s: topk_pallas.product_key_topk(s, 2, interpret=False), (scores,),
        {kernel_operands.TOPK_KERNEL: 1})
