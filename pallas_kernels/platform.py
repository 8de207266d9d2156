"""Where kernels run: compiled on their own platform, in interpret mode (their semantics)
elsewhere.

GPU kernels (Triton) compile on a GPU and run with `interpret=True` elsewhere. TPU kernels
(Mosaic) compile on a TPU and run elsewhere in JAX's TPU interpret mode, which simulates
HBM, VMEM, SMEM, DMAs and semaphores on the CPU.
"""

from __future__ import annotations

import jax
from jax import lax
from jax.experimental.pallas import tpu as pltpu
from jax.experimental.pallas import triton as pltriton
import jax.numpy as jnp


def on_gpu() -> bool:
  """True when JAX's default backend is a GPU (the Pallas kernels compile with Triton)."""
  return jax.default_backend() == "gpu"


def on_tpu() -> bool:
  """True when JAX's default backend is a TPU (the TPU kernels compile with Mosaic)."""
  return jax.default_backend() == "tpu"


def tpu_interpret() -> bool | pltpu.InterpretParams:
  """The `interpret` argument of a TPU kernel's `pallas_call` here: False (compile) on a
  TPU, TPU interpret mode with default settings elsewhere."""
  return False if on_tpu() else pltpu.InterpretParams()


def triton_barrier(interpret: bool) -> None:
  """Inside a GPU kernel: orders the program's earlier stores before its later loads (its
  threads share the memory they pass values through). Interpret mode runs a program's
  statements in order, so it has nothing to order."""
  if not interpret:
    pltriton.debug_barrier()


def fused_multiply_add(a: jax.Array, b: jax.Array, c: jax.Array, interpret: bool
                       ) -> jax.Array:
  """Inside a GPU kernel: a * b + c in float32 (broadcast to one shape), rounded once
  (PTX `fma.rn.f32`). Triton as XLA builds it kept a multiply and an add apart, two
  instructions per element (session 47). Interpret mode: a * b + c, rounded twice."""
  if interpret:
    return a * b + c
  shape = jnp.broadcast_shapes(a.shape, b.shape, c.shape)
  args = [jnp.broadcast_to(x.astype(jnp.float32), shape) for x in (a, b, c)]
  [result] = pltriton.elementwise_inline_asm(
      "fma.rn.f32 $0, $1, $2, $3;", args=args, constraints="=f,f,f,f", pack=1,
      result_shape_dtypes=[jax.ShapeDtypeStruct(shape, jnp.float32)])
  return result


def _int32_index(index):
  """An atomic's index with its Python ints as int32 scalars (Pallas' atomics take arrays)."""
  return jax.tree.map(lambda i: jnp.asarray(i, jnp.int32), index)


def signal(counter_ref, index, interpret: bool) -> jax.Array:
  """Inside a GPU kernel: announces that this program's earlier stores are done. Its threads
  meet, then one atomic add of 1 on the int32 counter_ref[index] (acquire-release at GPU
  scope), whose count before the add it returns (the same to every thread)."""
  triton_barrier(interpret)
  return pltriton.atomic_add(counter_ref, _int32_index(index), jnp.ones((), jnp.int32))


def wait_until(counter_ref, index, target, interpret: bool, stalls=None) -> None:
  """Inside a GPU kernel: spins on atomic reads until counter_ref[index] >= target, then the
  program's threads meet, so that its later loads see the stores that the programs which
  `signal`led it made before signalling.

  Interpret mode runs programs one after another, so a wait there cannot spin (it would
  never end): it reads the counter once and, where the target is not reached yet (a wait
  for a later program, which may never be resident on a GPU), adds 1 to stalls = (ref,
  index) if given, for tests to check."""
  index = _int32_index(index)
  seen = pltriton.atomic_add(counter_ref, index, jnp.zeros((), jnp.int32))
  if interpret:
    if stalls is not None:
      stalls_ref, stalls_index = stalls
      pltriton.atomic_add(stalls_ref, _int32_index(stalls_index),
                          (seen < target).astype(jnp.int32))
    return
  lax.while_loop(lambda seen: seen < target,
                 lambda _: pltriton.atomic_add(counter_ref, index, jnp.zeros((), jnp.int32)),
                 seen)
  triton_barrier(interpret)


def group_barrier(arrivals_ref, counter, programs: int, number, interpret: bool) -> None:
  """Inside a GPU kernel: waits until each of the `programs` programs sharing the int32
  counter arrivals_ref[counter] (zero at launch) has reached its `number`-th barrier (1, 2,
  ...): `signal`, then `wait_until` the count is `programs * number` (the atomics are
  acquire-release at GPU scope, so the loads after it see the stores every arrived program
  made before it; checked bitwise on the H200: WORKSPACE.md, issue 11, session 32). The
  programs must all be resident at once, or some never arrive.

  Interpret mode runs programs one after another, so a wait there never ends: it takes
  `programs` = 1 only (whose own arrival completes each barrier)."""
  if interpret and programs != 1:
    raise ValueError(f"a barrier between {programs} programs cannot run in interpret mode "
                     "(programs run one after another there): use 1")
  signal(arrivals_ref, counter, interpret)
  wait_until(arrivals_ref, counter, programs * number, interpret)


F32_DOT_PASSES = (1, 3)  # one TF32 pass, TF32x3


def f32_dot_passes_problem(name: str, passes) -> str | None:
  """Why `passes` (the field or argument `name`) is not a pass count `f32_dot_precision`
  takes, or None."""
  if passes not in F32_DOT_PASSES:
    return f"{name} must be 1 (TF32) or 3 (TF32x3), got {passes!r}"
  return None


def f32_dot_precision(interpret: bool, passes: int = 3):
  """The precision of a float32 matmul inside a GPU kernel: full precision in interpret
  mode; on the GPU TF32x3 (passes=3, about float32) or one TF32 pass (passes=1, what XLA's
  default float32 matmuls run at)."""
  if interpret:
    return lax.Precision.HIGHEST
  return (lax.DotAlgorithmPreset.TF32_TF32_F32_X3 if passes == 3
          else lax.DotAlgorithmPreset.TF32_TF32_F32)
