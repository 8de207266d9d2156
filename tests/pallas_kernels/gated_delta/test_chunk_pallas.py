"""The chunk-local gated delta kernels against the chunked XLA twin: outputs, final state and
gradients, which kernels run forward and under differentiation, errors.

On CPU the kernels run in interpret mode; the `gpu` test compiles them with Triton. The
gradients through the public op (`impl="pallas"`) are checked in
tests/sdm_jax/ops/test_gated_delta.py.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pallas_kernels.gated_delta import chunk_pallas
from sdm_jax.ops import gated_delta
from tests.pallas_kernels.pallas_calls import kernel_names, pallas_calls

interpret_on_cpu = pytest.mark.skipif(
    jax.default_backend() == "gpu", reason="interpret-mode semantics tests run on CPU")


def _inputs(seed, *, batch, seq_len, heads, key_dim, value_dim, dtype=jnp.float32,
            log_decay=None):
  """As a GDN layer feeds them: unit-norm q and k, g < 0 (or `log_decay` everywhere), beta
  in (0, 1); a random float32 initial state."""
  rng = np.random.default_rng(seed)
  shape = (batch, seq_len, heads)
  unit = lambda x: x / np.linalg.norm(x, axis=-1, keepdims=True)  # noqa: E731
  q = unit(rng.normal(size=(*shape, key_dim)))
  k = unit(rng.normal(size=(*shape, key_dim)))
  v = rng.normal(size=(*shape, value_dim))
  g = -np.log1p(np.exp(-rng.normal(size=shape) - 2.0))
  if log_decay is not None:
    g = np.full(shape, log_decay)
  beta = 1.0 / (1.0 + np.exp(-rng.normal(size=shape)))
  state = rng.normal(size=(batch, heads, key_dim, value_dim))
  return (*(jnp.asarray(x, dtype) for x in (q, k, v, g, beta)),
          jnp.asarray(state, jnp.float32))


def _relative_error(got, want):
  got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
  return np.abs(got - want).max() / np.abs(want).max()


def _values_and_gradients(op, inputs, seed):
  """op(*inputs) = (o, final state) and the gradients of a random linear function of both
  w.r.t. all six inputs, in one jitted call."""
  shapes = jax.eval_shape(op, *inputs)
  rng = np.random.default_rng(seed)
  cotangents = [jnp.asarray(rng.normal(size=x.shape), x.dtype) for x in shapes]

  def run(*inputs):
    outputs, vjp = jax.vjp(op, *inputs)
    return outputs, vjp(tuple(cotangents))

  return jax.jit(run)(*inputs)


GRADIENT_NAMES = ("q", "k", "v", "g", "beta", "initial_state")


def test_doubling_inverts_a_unit_lower_triangular_chunk():
  """(I + a)^-1 by doubling over a whole 64 x 64 chunk (what `diagonal_inverse="chunk"`
  builds X with) against numpy's inverse, for A as the kernels form it from unit keys."""
  rng = np.random.default_rng(3)
  keys = rng.normal(size=(64, 16))
  keys /= np.linalg.norm(keys, axis=-1, keepdims=True)
  a = np.tril(0.9 * keys @ keys.T, -1)
  inverse = chunk_pallas._unit_lower_inverse_by_doubling(
      jnp.asarray(a, jnp.float32), jax.lax.Precision.HIGHEST)
  want = np.linalg.inv(np.eye(64) + a)
  assert np.all(np.triu(np.asarray(inverse), 1) == 0)
  assert _relative_error(inverse, want) < 1e-5


VALUES = dict(forward_form="values", diagonal_inverse="chunk")
# The forward form the 16-bit default had before "values" (still the float32 default).
TRANSITIONS = dict(forward_form="transitions", values_operands="float32",
                   backward_operands="float32")


@interpret_on_cpu
@pytest.mark.parametrize("case", [
    # T = 37: two full chunks and a padded one; two output slabs of 16 columns, two steps
    # of the backward's column loop.
    dict(shape=dict(seq_len=37, key_dim=16, value_dim=32), chunk=16,
         tiling=dict(block_v=16, backward_block_v=16)),
    # Two 16-row blocks per chunk: the inverse's block below the diagonal; bfloat16 under
    # the 16-bit default (the "values" form on stored operands) and the transitions form.
    dict(shape=dict(seq_len=64, key_dim=16, value_dim=16), chunk=32, tiling={},
         dtype=jnp.bfloat16),
    dict(shape=dict(seq_len=64, key_dim=16, value_dim=16), chunk=32, tiling=TRANSITIONS,
         dtype=jnp.bfloat16),
    # g = -20 per token: exp(-G) would overflow, exp of in-chunk differences must not.
    dict(shape=dict(seq_len=40, key_dim=32, value_dim=16), chunk=32, tiling={},
         log_decay=-20.0),
    # Four 16-row blocks by substitution, weak decay (long products survive); bfloat16.
    dict(shape=dict(seq_len=64, key_dim=16, value_dim=16), chunk=64,
         tiling=dict(TRANSITIONS, diagonal_inverse="substitution"), log_decay=-0.01,
         dtype=jnp.bfloat16),
    # The whole chunk on whole tiles: a padded chunk of 16, two update steps; weak decay at
    # C = 64 in bfloat16; strong decay.
    dict(shape=dict(seq_len=37, key_dim=16, value_dim=32), chunk=16,
         tiling=dict(diagonal_inverse="chunk", prepare_block_v=16)),
    dict(shape=dict(seq_len=128, key_dim=16, value_dim=16), chunk=64,
         tiling=dict(TRANSITIONS, diagonal_inverse="chunk"), log_decay=-0.01,
         dtype=jnp.bfloat16),
    dict(shape=dict(seq_len=40, key_dim=32, value_dim=16), chunk=32,
         tiling=dict(diagonal_inverse="chunk"), log_decay=-20.0),
    # forward_form="values": a padded chunk, two slabs in every kernel (float32 and bf16
    # storage of w, u and the written values); weak decay at C = 64; strong decay.
    dict(shape=dict(seq_len=37, key_dim=16, value_dim=32), chunk=16,
         tiling=dict(VALUES, block_v=16, prepare_block_v=16, state_block_v=16)),
    dict(shape=dict(seq_len=37, key_dim=16, value_dim=32), chunk=16,
         tiling=dict(VALUES, block_v=16, prepare_block_v=16, state_block_v=16),
         dtype=jnp.bfloat16),
    dict(shape=dict(seq_len=128, key_dim=16, value_dim=16), chunk=64, tiling=VALUES,
         log_decay=-0.01, dtype=jnp.bfloat16),
    dict(shape=dict(seq_len=40, key_dim=32, value_dim=16), chunk=32, tiling=VALUES,
         log_decay=-20.0),
    # ... with the state pass's and the output's products on the stored (bf16) operands.
    dict(shape=dict(seq_len=37, key_dim=16, value_dim=32), chunk=16,
         tiling=dict(VALUES, values_operands="stored", block_v=16, state_block_v=16),
         dtype=jnp.bfloat16),
    dict(shape=dict(seq_len=128, key_dim=16, value_dim=16), chunk=64,
         tiling=dict(VALUES, values_operands="stored"), log_decay=-0.01, dtype=jnp.bfloat16),
    # backward_form="split": two slabs in both halves, a padded chunk; bfloat16 with the
    # values form; strong decay.
    dict(shape=dict(seq_len=37, key_dim=16, value_dim=32), chunk=16,
         tiling=dict(backward_form="split", backward_block_v=16)),
    dict(shape=dict(seq_len=64, key_dim=16, value_dim=32), chunk=32,
         tiling=dict(VALUES, backward_form="split", backward_block_v=16), dtype=jnp.bfloat16),
    dict(shape=dict(seq_len=40, key_dim=32, value_dim=16), chunk=32,
         tiling=dict(backward_form="split"), log_decay=-20.0),
    # backward_operands="stored" (the 16-bit default): the chunk backward's products on bf16
    # operands, fused (two slabs) and split.
    dict(shape=dict(seq_len=37, key_dim=16, value_dim=32), chunk=16,
         tiling=dict(backward_operands="stored", backward_block_v=16), dtype=jnp.bfloat16),
    dict(shape=dict(seq_len=64, key_dim=16, value_dim=32), chunk=32,
         tiling=dict(backward_operands="stored", backward_form="split", backward_block_v=16),
         dtype=jnp.bfloat16),
])
def test_kernels_match_the_chunked_twin(case):
  """Outputs, final state and every gradient (the backward kernels) against the XLA twin."""
  dtype = case.get("dtype", jnp.float32)
  inputs = _inputs(0, batch=1, heads=2, dtype=dtype, log_decay=case.get("log_decay"),
                   **case["shape"])
  scale, chunk = 0.7, case["chunk"]
  config = chunk_pallas.default_config(case["shape"]["value_dim"], dtype)._replace(
      **case["tiling"])
  kernels = functools.partial(chunk_pallas.gated_delta_rule, scale=scale, chunk_size=chunk,
                              config=config, interpret=True)
  twin = lambda *x: gated_delta.gated_delta_rule_chunked(  # noqa: E731
      *x[:5], scale=scale, initial_state=x[5], chunk_size=chunk)
  (o, final), gradients = _values_and_gradients(kernels, inputs, 1)
  (o_twin, final_twin), twin_gradients = _values_and_gradients(twin, inputs, 1)
  assert o.shape == o_twin.shape and o.dtype == dtype
  assert final.shape == final_twin.shape and final.dtype == jnp.float32
  # bfloat16: o and the gradients of bfloat16 inputs are rounded to bfloat16 (2^-9); so
  # is the "values" form's w and u, hence its final state (and the start states the
  # gradients use).
  tolerance = 1e-5 if dtype == jnp.float32 else 1e-2
  assert _relative_error(o, o_twin) < tolerance
  rounded_state = config.forward_form == "values" and dtype != jnp.float32
  assert _relative_error(final, final_twin) < (tolerance if rounded_state else 1e-5)
  largest = max(np.abs(np.asarray(x, np.float32)).max() for x in twin_gradients)
  for name, got, want in zip(GRADIENT_NAMES, gradients, twin_gradients):
    assert got.shape == want.shape and got.dtype == want.dtype, name
    assert np.isfinite(np.asarray(got, np.float32)).all(), name
    if case.get("log_decay", 0.0) <= -10.0 and name == "g":
      # Under decay exp(-20) per token, d g is a difference of terms that nearly cancel
      # (|d g| ~ 1e-8 here): both sides are right to float32 rounding of those terms.
      error = np.abs(np.asarray(got, np.float64) - np.asarray(want, np.float64)).max()
      assert error < 1e-6 * largest, name
    else:
      assert _relative_error(got, want) < tolerance, name


def _gradient_jaxpr(op, inputs):
  """The jaxpr of the gradient of sum(o) + sum(final state) w.r.t. every one of `inputs`
  (q, k, v, g, beta, initial state) of `op(*inputs) -> (o, final state)`."""
  def loss(*args):
    o, final = op(*args)
    return o.sum() + final.sum()
  return jax.make_jaxpr(jax.grad(loss, range(len(inputs))))(*inputs).jaxpr


def test_gradients_run_the_backward_kernels_or_the_twin():
  """Forward-only calls trace the three launches. Under `grad`, impl="pallas" runs the
  backward kernels by default; with backward="chunked" only the twin runs (the state kernel
  forward and backward), so training costs what the chunked path costs."""
  q, k, v, g, beta, state = _inputs(1, batch=1, seq_len=32, heads=1, key_dim=16,
                                    value_dim=16)
  op = functools.partial(gated_delta.gated_delta_rule, chunk_size=16, impl="pallas")
  forward = jax.make_jaxpr(op)(q, k, v, g, beta, initial_state=state)
  assert kernel_names(forward.jaxpr) == ["_prepare_kernel", "_forward_kernel",
                                          "_output_kernel"]

  def gradient_kernels(op):
    return kernel_names(_gradient_jaxpr(lambda *x: op(*x[:5], initial_state=x[5]),
                                         (q, k, v, g, beta, state)))

  assert gradient_kernels(op) == [
      "_prepare_kernel", "_forward_kernel", "_output_kernel", "_start_gradient_kernel",
      "_backward_kernel", "_chunk_backward_kernel"]
  twin = functools.partial(gated_delta.gated_delta_rule_chunked, chunk_size=16,
                           state_pass="pallas")
  through_twin = functools.partial(gated_delta.gated_delta_rule_pallas, chunk_size=16,
                                   backward="chunked")
  assert gradient_kernels(through_twin) == gradient_kernels(twin) == [
      "_forward_kernel", "_backward_kernel"]


def test_values_form_runs_its_own_kernels_and_writes_transitions_only_for_gradients():
  q, k, v, g, beta, state = _inputs(1, batch=1, seq_len=32, heads=1, key_dim=16,
                                    value_dim=16)
  config = chunk_pallas.default_config(16)._replace(**VALUES)
  op = functools.partial(chunk_pallas.gated_delta_rule, scale=1.0, chunk_size=16,
                         config=config, interpret=True)
  forward = jax.make_jaxpr(op)(q, k, v, g, beta, state)
  assert kernel_names(forward.jaxpr) == ["_prepare_values_kernel", "_values_state_kernel",
                                          "_output_values_kernel"]
  prepare = pallas_calls(forward.jaxpr)[0]
  assert len(prepare.outvars) == 4  # w, K~, u and X: no transitions without gradients

  gradient = _gradient_jaxpr(op, (q, k, v, g, beta, state))
  assert len(pallas_calls(gradient)[0].outvars) == 5  # and the transitions
  assert kernel_names(gradient) == [
      "_prepare_values_kernel", "_values_state_kernel", "_output_values_kernel",
      "_start_gradient_kernel", "_backward_kernel", "_chunk_backward_kernel"]


def test_split_backward_runs_two_kernels_in_place_of_the_fused_one():
  q, k, v, g, beta, state = _inputs(1, batch=1, seq_len=32, heads=1, key_dim=16,
                                    value_dim=16)
  config = chunk_pallas.default_config(16)._replace(backward_form="split")
  op = functools.partial(chunk_pallas.gated_delta_rule, scale=1.0, chunk_size=16,
                         config=config, interpret=True)

  gradient = _gradient_jaxpr(op, (q, k, v, g, beta, state))
  assert kernel_names(gradient)[3:] == [
      "_start_gradient_kernel", "_backward_kernel", "_written_gradient_kernel",
      "_chunk_sums_backward_kernel"]


@pytest.mark.parametrize("shape,match", [
    (dict(key_dim=12, value_dim=16, chunk_size=16), "K must be a power of two >= 16"),
    (dict(key_dim=16, value_dim=48, chunk_size=16), "V must be a power of two >= 16"),
    (dict(key_dim=16, value_dim=16, chunk_size=8), "chunk_size must be a power of two >= 16"),
])
def test_rejects_shapes_the_kernels_cannot_take(shape, match):
  chunk_size = shape.pop("chunk_size")
  *inputs, state = _inputs(2, batch=1, seq_len=16, heads=1, **shape)
  with pytest.raises(ValueError, match=match):
    chunk_pallas.gated_delta_rule(*inputs, state, scale=1.0, chunk_size=chunk_size,
                                  twin=None, interpret=True)


def test_rejects_float64_and_configs_that_do_not_tile_v():
  *inputs, state = _inputs(3, batch=1, seq_len=16, heads=1, key_dim=16, value_dim=32)
  for config, match in ((dict(block_v=64), "block_v must be a power of two >= 16 dividing V"),
                        (dict(state_block_v=24), "state_block_v must be"),
                        (dict(output_warps=3), "output_warps must be"),
                        (dict(state_f32_dot_passes=2), "state_f32_dot_passes must be 1"),
                        (dict(diagonal_inverse="solve"), "diagonal_inverse must be one of"),
                        (dict(forward_form="states"), "forward_form must be one of"),
                        (dict(values_operands="bf16"), "values_operands must be one of"),
                        (dict(backward_operands="bf16"), "backward_operands must be one of"),
                        (dict(backward_form="two"), "backward_form must be one of"),
                        (dict(forward_form="values", diagonal_inverse="substitution"),
                         "forward_form='values' needs diagonal_inverse='chunk'")):
    with pytest.raises(ValueError, match=match):
      chunk_pallas.gated_delta_rule(*inputs, state, scale=1.0, chunk_size=16, twin=None,
                                    config=chunk_pallas.default_config(32)._replace(**config))
  with jax.enable_x64(True):
    with pytest.raises(ValueError, match="float32, got float64"):
      chunk_pallas.gated_delta_rule(*inputs, state.astype(jnp.float64), scale=1.0,
                                    chunk_size=16, twin=None)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [jnp.bfloat16, jnp.float32])
def test_compiled_kernels_match_the_twin(dtype):
  """Issue 16's head shape (K = 64, V = 128, C = 64), T not a multiple of C: outputs, final
  state and gradients (the backward kernels) of the compiled kernels, under the default
  tiling and another, against the twin (tests run XLA's float32 matmuls at full precision,
  tests/conftest.py)."""
  inputs = _inputs(4, batch=2, seq_len=1000, heads=3, key_dim=64, value_dim=128, dtype=dtype)
  twin = lambda *x: gated_delta.gated_delta_rule_chunked(  # noqa: E731
      *x[:5], initial_state=x[5], chunk_size=64, state_pass="pallas")
  (o_twin, final_twin), twin_gradients = _values_and_gradients(twin, inputs, 5)
  tolerance = 1e-4 if dtype == jnp.float32 else 1e-2
  sixteen_bit = chunk_pallas.default_config(128, jnp.bfloat16)
  if dtype == jnp.float32:  # the 16-bit tiling at float32's precision
    sixteen_bit = sixteen_bit._replace(f32_dot_passes=3, state_f32_dot_passes=3)
  for config in (chunk_pallas.default_config(128), chunk_pallas.KernelConfig(
      block_v=32, state_block_v=64, prepare_warps=8, output_warps=8, backward_block_v=32,
      backward_warps=8, num_stages=2), sixteen_bit, sixteen_bit._replace(**TRANSITIONS),
      sixteen_bit._replace(values_operands="float32"),
      sixteen_bit._replace(backward_form="split"),
      sixteen_bit._replace(backward_operands="float32")):
    kernels = functools.partial(chunk_pallas.gated_delta_rule, scale=64**-0.5,
                                chunk_size=64, config=config)
    (o, final), gradients = _values_and_gradients(kernels, inputs, 5)
    assert o.dtype == dtype
    assert _relative_error(o, o_twin) < tolerance, config
    assert _relative_error(final, final_twin) < tolerance, config
    for name, got, want in zip(GRADIENT_NAMES, gradients, twin_gradients):
      assert _relative_error(got, want) < tolerance, (name, config)
