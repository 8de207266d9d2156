"""Running TPU kernels in JAX's TPU interpret mode with its race detector, and lowering them
for TPU on a machine without one.

`RACE_CHECKED` simulates two TensorCores: the grid's "parallel" dimensions are split
between them, so two programs that touch the same bytes without synchronisation are
reported. JAX keeps the detector's verdict in a module-level state (not public API; the
same place in JAX 0.10.2 and 0.11.2): `assert_no_races` resets it, runs the function and
reads it.
"""

from __future__ import annotations

import jax
from jax._src.pallas.mosaic.interpret import interpret_pallas_call as _interpreter
from jax.experimental.pallas import tpu as pltpu

RACE_CHECKED = pltpu.InterpretParams(detect_races=True, num_cores_or_threads=2)


def races_found() -> bool:
  """The race detector's verdict on the kernels interpreted since the last reset."""
  state = _interpreter.races
  if state is None:
    raise AssertionError("no interpreted TPU kernel ran with detect_races=True")
  return state.races_found


def assert_no_races(fn, *args):
  """Runs fn(*args) (its TPU kernels interpreted with detect_races=True) to completion and
  fails if the detector saw a race. Returns fn's result."""
  pltpu.reset_tpu_interpret_mode_state()
  result = jax.block_until_ready(fn(*args))
  assert not races_found(), "the TPU interpreter's race detector reported a race"
  return result


def tpu_custom_calls(fn, *args) -> int:
  """Lowers jit(fn)(*args) for TPU (args may be ShapeDtypeStructs) and returns how many
  Mosaic kernels the module holds. Lowering runs Pallas' TPU lowering and the Mosaic
  dialect's verifier; the layout passes and code generation run only in a TPU's compiler."""
  lowered = jax.jit(fn).trace(*args).lower(lowering_platforms=("tpu",))
  return lowered.as_text().count("tpu_custom_call")
