"""The phase-2 TPU kernels against their XLA twin, and lowered for TPU.

No TPU is available: the kernels run in TPU interpret mode (HBM, VMEM, SMEM, DMAs and
semaphores simulated on the CPU) on two simulated cores with the race detector on, at small
shapes; and they are lowered for TPU (Pallas' Mosaic lowering and the dialect's verifier)
at a shape like the benchmark's. What only a TPU's compiler checks (layouts, VMEM use) is
not tested.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import pytest

from pallas_kernels.sparse_delta import scan_pallas_tpu
from pallas_kernels.sparse_delta.plan import ChunkCoefs, ChunkIds, ChunkPlan
from tests.pallas_kernels import tpu_interpret
from tests.pallas_kernels.sparse_delta.test_scan_pallas import _compare
from tests.pallas_kernels.sparse_delta.test_scan_pallas import _outputs_and_grads
from tests.pallas_kernels.sparse_delta.test_scan_pallas import _plan
from tests.pallas_kernels.sparse_delta.test_scan_pallas import _xla_scan


# Only Dv = 256 gives two column slabs, one per simulated core, so only it can race; the
# other forms (per-slot error, a shared table) run through the op in interpret mode in
# tests/sdm_jax/ops/test_sparse_delta.py (`pallas_tpu`, both in one test), one slab each.
@pytest.mark.parametrize("error,shared_memory,value_dim", [("shared", False, 256)])
def test_kernels_match_the_xla_twin_without_races(error, shared_memory, value_dim):
  # T = 40 in chunks of 16 (the last one padded); N = 40 slots for 3 writes x 16 tokens
  # (every slot written several times per chunk); head 1 writes and reads the same slots at
  # every token.
  memory, plan = _plan(11, error=error, shared_memory=shared_memory, batch=1, seq_len=40,
                       heads=2, num_slots=40, value_dim=value_dim, writes=3, reads=5)
  kernel = functools.partial(scan_pallas_tpu.scan_chunks, error=error,
                             interpret=tpu_interpret.RACE_CHECKED)
  got = tpu_interpret.assert_no_races(
      lambda m, p: _outputs_and_grads(kernel, m, p, 12), memory, plan)
  _compare(got, _outputs_and_grads(functools.partial(_xla_scan, error=error), memory, plan,
                                   12), 1e-5)


def _abstract_plan(error, *, batch=2, heads=1, num_chunks=4, chunk=32, writes=64, reads=64,
                   value_dim=512):
  """A plan of ShapeDtypeStructs (lowering needs shapes only)."""
  def f32(*shape):
    return jax.ShapeDtypeStruct((batch, heads, num_chunks, *shape), jnp.float32)

  def i32(*shape):
    return jax.ShapeDtypeStruct((batch, heads, num_chunks, *shape), jnp.int32)

  shared = error == "shared"
  ids = ChunkIds(slots=i32(chunk * writes), write_pos=i32(chunk, writes),
                 read_idx=i32(chunk, reads), write_order=i32(chunk * writes),
                 read_order=i32(chunk * reads), read_pos=i32(chunk, reads),
                 write_inverse=i32(chunk * writes), read_inverse=i32(chunk * reads))
  coefs = ChunkCoefs(write_coef=f32(chunk, writes) if shared else None,
                     solve=f32(chunk, chunk) if shared else None, read_coef=f32(chunk, reads),
                     qk=f32(chunk, chunk), update_coef=f32(chunk, writes),
                     end_decay=f32(chunk * writes), values=f32(chunk, value_dim))
  return ChunkPlan(ids, coefs)


@pytest.mark.parametrize("error", ["shared", "per_slot"])
def test_forward_and_backward_lower_for_tpu(error):
  """C = 32, W = R = 64, Dv = 512 (four slabs), a shared table of 16,384 slots."""
  plan = _abstract_plan(error)

  def loss(memory, coefs, ids):
    out, final = scan_pallas_tpu.scan_chunks(memory, ChunkPlan(ids, coefs), error=error,
                                             interpret=False)
    return jnp.sum(out) + jnp.sum(final)

  memory = jax.ShapeDtypeStruct((1, 16384, 512), jnp.float32)
  grad = jax.grad(loss, argnums=(0, 1))
  assert tpu_interpret.tpu_custom_calls(grad, memory, plan.coefs, plan.ids) == 2


@pytest.mark.tpu
@pytest.mark.parametrize("error", ["shared", "per_slot"])
def test_compiled_kernels_match_the_xla_twin(error):
  """On a TPU (never run: none was available): C = 64, W = R = 16, 8 chunks, 2 slabs."""
  memory, plan = _plan(13, error=error, chunk_size=64, shared_memory=True, batch=3,
                       seq_len=512, heads=2, num_slots=1024, value_dim=256, writes=16,
                       reads=16)
  kernel = functools.partial(scan_pallas_tpu.scan_chunks, error=error, interpret=False)
  _compare(_outputs_and_grads(kernel, memory, plan, 14),
           _outputs_and_grads(functools.partial(_xla_scan, error=error), memory, plan, 14),
           1e-5)


@pytest.mark.parametrize("table_dtype,value_dim,chunk,match", [
    (jnp.bfloat16, 128, 32, "float32 table"),
    (jnp.float32, 64, 32, "Dv a multiple of 128"),
    (jnp.float32, 128, 256, "MiB of VMEM"),
])
def test_rejects_what_it_cannot_take(table_dtype, value_dim, chunk, match):
  plan = _abstract_plan("shared", chunk=chunk, value_dim=value_dim)
  memory = jax.ShapeDtypeStruct((2, 1, 1024, value_dim), table_dtype)
  with pytest.raises(ValueError, match=match):
    jax.eval_shape(functools.partial(scan_pallas_tpu.scan_chunks, error="shared"), memory,
                   plan)


def test_rejects_a_plan_of_the_other_error_form():
  memory = jax.ShapeDtypeStruct((2, 1, 1024, 128), jnp.float32)
  with pytest.raises(ValueError, match="does not match the plan"):
    jax.eval_shape(functools.partial(scan_pallas_tpu.scan_chunks, error="shared"), memory,
                   _abstract_plan("per_slot", value_dim=128))
