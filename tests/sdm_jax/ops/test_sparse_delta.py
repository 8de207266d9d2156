from __future__ import annotations

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pallas_kernels import platform
from sdm_jax.ops import gated_delta_rule
from sdm_jax.ops import sparse_delta_rule
from sdm_jax.ops import sparse_delta_step
from sdm_jax.ops.sparse_delta import checks
from sdm_jax.ops.sparse_delta import chunk
from sdm_jax.ops.sparse_delta import resolve_impl
from sdm_jax.ops.sparse_delta import sparse_delta_rule_chunked
from sdm_jax.ops.sparse_delta import sparse_delta_rule_reference
from tests.pallas_kernels.sparse_delta.uninitialized import poison_uninitialized

ERRORS = ("shared", "per_slot")


def _softmax(x):
  e = np.exp(x - x.max(axis=-1, keepdims=True))
  return e / e.sum(axis=-1, keepdims=True)


def _sigmoid(x):
  return 1 / (1 + np.exp(-x))


def _distinct_ids(rng, shape, num_slots, count):
  """[*shape, count] ids, distinct along the last axis: a random permutation's head."""
  return np.argsort(rng.random((*shape, num_slots)), axis=-1)[..., :count]


def random_inputs(seed, *, batch=2, seq_len=23, heads=3, num_slots=12, value_dim=5,
                  writes=4, reads=3, dtype=jnp.float32, shared_memory=False,
                  full_overwrite=True):
  """Random inputs with heavy slot reuse (small N) and three kinds of heads.

  Head 0: ordinary gates; with `full_overwrite`, token 5 (if any) writes one slot with
  weight 1 and beta = 1 (log(1 - beta k) = -inf in the per-slot form).
  Head 1 (if any): every token writes the same slots, and reads them.
  Head 2 (if any): strong decay g = -20.
  Returns the positional arguments of `sparse_delta_rule`. Built in numpy so that making
  inputs compiles nothing.
  """
  rng = np.random.default_rng(seed)
  tok = (batch, seq_len, heads)
  write_idx = _distinct_ids(rng, tok, num_slots, writes)
  read_idx = rng.integers(0, num_slots, (*tok, reads))
  if heads > 1:
    write_idx[:, :, 1] = write_idx[:, :1, 1]
    read_idx[:, :, 1, :min(reads, writes)] = write_idx[:, :, 1, :reads]
  write_w = _softmax(rng.standard_normal((*tok, writes)))
  read_w = _softmax(rng.standard_normal((*tok, reads)))
  v = rng.standard_normal((*tok, value_dim))
  beta = _sigmoid(rng.standard_normal(tok))
  g = -np.logaddexp(0, rng.standard_normal(tok))
  if heads > 2:
    g[:, :, 2] = -20.0
  if full_overwrite and seq_len > 5:
    write_w[:, 5, 0] = np.eye(writes)[0]
    beta[:, 5, 0] = 1.0
  memory = rng.standard_normal(((heads,) if shared_memory else (batch, heads))
                               + (num_slots, value_dim))
  cast = lambda x: jnp.asarray(x, dtype)
  ids = lambda x: jnp.asarray(x, jnp.int32)
  return (cast(memory), ids(write_idx), cast(write_w), cast(v), cast(beta), cast(g),
          ids(read_idx), cast(read_w))


def _assert_close(got, want, tol):
  chex.assert_trees_all_equal_shapes_and_dtypes(tuple(got), tuple(want))
  chex.assert_trees_all_close(tuple(got), tuple(want), rtol=tol, atol=tol)


@pytest.mark.parametrize("error,chunk_size", [
    ("shared", 3), ("shared", 8), ("shared", 32), ("per_slot", 8)])
def test_chunked_matches_reference(error, chunk_size):
  # T = 23 is a multiple of none of the chunk sizes; 32 > T.
  args = random_inputs(chunk_size)
  want = sparse_delta_rule(*args, error=error, impl="reference")
  got = sparse_delta_rule(*args, error=error, impl="chunked", chunk_size=chunk_size)
  assert got[0].shape == (2, 23, 3, 5) and got[1].shape == (2, 3, 12, 5)
  _assert_close(got, want, 1e-5)
  assert float(jnp.abs(want[0][:, :, 2]).max()) > 1e-3  # strong decay still reads something


@pytest.mark.parametrize("error", ERRORS)
def test_shared_initial_memory_broadcasts_over_batch(error):
  args = random_inputs(11, shared_memory=True)
  per_sequence = (np.broadcast_to(np.asarray(args[0]), (2, *args[0].shape)),) + args[1:]
  got = sparse_delta_rule(*args, error=error, chunk_size=8)
  _assert_close(got, sparse_delta_rule(*per_sequence, error=error, impl="reference"), 1e-5)
  # Broadcasting must not change the math; only the reduction order may differ (GPU).
  _assert_close(got, sparse_delta_rule(*per_sequence, error=error, impl="auto", chunk_size=8),
                1e-6)


def test_bfloat16_inputs_accumulate_in_float32():
  """bf16 activations with a float32 table: the math runs in float32."""
  args = list(random_inputs(12, dtype=jnp.bfloat16))
  args[0] = args[0].astype(jnp.float32)
  out, memory = sparse_delta_rule(*args, chunk_size=8)
  assert out.dtype == jnp.bfloat16 and memory.dtype == jnp.float32
  upcast = tuple(np.asarray(x, np.float32) if x.dtype == jnp.bfloat16 else x for x in args)
  want_out, want_memory = sparse_delta_rule(*upcast, chunk_size=8)
  # The bf16 run accumulates in float32, so it matches the float32 run up to reduction
  # order (exactly on CPU; within float32 rounding on GPU) and one bf16 rounding of out.
  np.testing.assert_allclose(np.asarray(out, np.float32), np.asarray(want_out),
                             rtol=2 ** -8, atol=1e-6)
  np.testing.assert_allclose(np.asarray(memory), np.asarray(want_memory), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("impl", ["reference", "chunked"])
def test_a_bfloat16_table_stays_bfloat16(impl):
  """The table's storage dtype is the one given; rows are widened for the math. The
  reference rounds only the final table, the chunked form each chunk's stored rows."""
  args = list(random_inputs(16))
  args[0] = args[0].astype(jnp.bfloat16)
  out, memory = sparse_delta_rule(*args, chunk_size=8, impl=impl)
  assert out.dtype == jnp.float32 and memory.dtype == jnp.bfloat16
  widened = [args[0].astype(jnp.float32)] + args[1:]
  want_out, want_memory = sparse_delta_rule(*widened, impl="reference")
  tol = 0 if impl == "reference" else 2e-2  # a few bf16 roundings of stored rows
  np.testing.assert_allclose(np.asarray(out), np.asarray(want_out), rtol=tol, atol=tol)
  np.testing.assert_allclose(np.asarray(memory, np.float32),
                             np.asarray(want_memory.astype(jnp.bfloat16), np.float32),
                             rtol=tol, atol=tol)


@pytest.mark.parametrize("error", ERRORS)
def test_chained_decode_steps_equal_the_full_pass(error):
  args = random_inputs(13)
  memory, token_args = args[0], [np.asarray(x) for x in args[1:]]
  outs = []
  for t in range(args[1].shape[1]):
    out, memory = sparse_delta_step(memory, *(x[:, t] for x in token_args), error=error)
    outs.append(np.asarray(out))
  want_out, want_memory = sparse_delta_rule(*args, error=error, chunk_size=8)
  _assert_close((np.stack(outs, axis=1), memory), (want_out, want_memory), 1e-5)


@pytest.mark.parametrize("impl", ["auto", "pallas"])
def test_step_accepts_a_shared_table(impl):
  """"pallas": the fused step kernel (interpreted here), Dv = 16 for it."""
  args = random_inputs(14, seq_len=1, shared_memory=True, value_dim=16)
  out, memory = sparse_delta_step(args[0], *(np.asarray(x)[:, 0] for x in args[1:]), impl=impl)
  want_out, want_memory = sparse_delta_rule_reference(*args)
  _assert_close((out, memory), (want_out[:, 0], want_memory), 1e-6)


def test_step_kernel_names_the_limit_and_auto_declines_it(monkeypatch):
  args = random_inputs(16, seq_len=1)  # Dv = 5
  token = [np.asarray(x)[:, 0] for x in args[1:]]
  with pytest.raises(ValueError, match="impl='pallas_gpu' cannot run these inputs: Dv must"):
    sparse_delta_step(args[0], *token, impl="pallas")
  monkeypatch.setattr(platform, "on_gpu", lambda: True)  # auto: the XLA step, no error
  _assert_close(sparse_delta_step(args[0], *token), sparse_delta_step(args[0], *token,
                                                                      impl="reference"), 0)


class StepVariantsTest(chex.TestCase):

  @chex.variants(with_jit=True, without_jit=True)
  def test_step_agrees_jitted_and_not_with_the_reference(self):
    args = random_inputs(15, seq_len=1)
    step = self.variant(functools.partial(sparse_delta_step, error="shared"))
    out, memory = step(args[0], *(x[:, 0] for x in args[1:]))
    chex.assert_shape(out, args[3][:, 0].shape)
    want_out, want_memory = sparse_delta_rule_reference(*args)
    _assert_close((out, memory), (want_out[:, 0], want_memory), 1e-6)


def test_shared_form_with_every_slot_written_is_the_dense_gated_delta_rule():
  """W = R = N: the sparse key is the dense key, the masked decay the full one."""
  batch, seq_len, heads, num_slots, value_dim = 2, 19, 2, 16, 3
  rng = np.random.default_rng(15)
  tok = (batch, seq_len, heads)
  # Every slot, each token in its own order (order must not matter).
  write_idx = _distinct_ids(rng, tok, num_slots, num_slots)
  read_idx = _distinct_ids(rng, tok, num_slots, num_slots)
  write_w = _softmax(rng.standard_normal((*tok, num_slots)))
  read_w = rng.standard_normal((*tok, num_slots))
  v = rng.standard_normal((*tok, value_dim))
  beta = _sigmoid(rng.standard_normal(tok))
  g = -np.logaddexp(0, rng.standard_normal(tok))
  memory = rng.standard_normal((batch, heads, num_slots, value_dim))
  # Dense keys and queries indexed by slot.
  k = np.take_along_axis(write_w, np.argsort(write_idx, axis=-1), axis=-1)
  q = np.take_along_axis(read_w, np.argsort(read_idx, axis=-1), axis=-1)

  def dense_step(state, token):  # state [B, H, N, Dv]
    k_t, q_t, v_t, beta_t, g_t = token
    state = jnp.exp(g_t)[..., None, None] * state
    state = state - beta_t[..., None, None] * k_t[..., :, None] * jnp.einsum(
        "bhn,bhnd->bhd", k_t, state)[..., None, :]
    state = state + beta_t[..., None, None] * k_t[..., :, None] * v_t[..., None, :]
    return state, jnp.einsum("bhn,bhnd->bhd", q_t, state)

  time_major = [jnp.asarray(np.moveaxis(x, 1, 0), jnp.float32) for x in (k, q, v, beta, g)]
  dense_state, dense_out = jax.jit(jax.lax.scan, static_argnums=0)(
      dense_step, jnp.asarray(memory, jnp.float32), time_major)
  want = (jnp.moveaxis(dense_out, 0, 1), dense_state)
  f32 = lambda x: jnp.asarray(x, jnp.float32)
  args = (f32(memory), jnp.asarray(write_idx, jnp.int32), f32(write_w), f32(v), f32(beta),
          f32(g), jnp.asarray(read_idx, jnp.int32), f32(read_w))
  for impl in ("reference", "chunked"):
    _assert_close(sparse_delta_rule(*args, impl=impl, chunk_size=8), want, 1e-5)
  # The cross-check between the two ops: SDM with dense keys is Gated DeltaNet with K = N
  # (scale 1: SDM's read weights are not scaled).
  for impl in ("reference", "chunked"):
    gdn = gated_delta_rule(f32(q), f32(k), f32(v), f32(g), f32(beta), scale=1.0,
                           initial_state=f32(memory), chunk_size=8, impl=impl)
    _assert_close(gdn, want, 1e-5)


@pytest.mark.parametrize("error", ERRORS)
def test_float64_values_and_gradients_are_exact(error):
  with jax.enable_x64(True):
    # A shared [H, N, Dv] table: its gradient sums over the batch.
    args = random_inputs(20, batch=2, seq_len=11, heads=3, num_slots=10, value_dim=4,
                         writes=3, reads=3, dtype=jnp.float64, shared_memory=True,
                         full_overwrite=False)  # no gradient through a full overwrite
    float_positions = (0, 2, 3, 4, 5, 7)  # memory, write_w, v, beta, g, read_w
    rng = np.random.default_rng(21)
    out_ct = rng.standard_normal((2, 11, 3, 4))
    mem_ct = rng.standard_normal((2, 3, 10, 4))

    def run(impl, floats):
      full = list(args)
      for position, x in zip(float_positions, floats):
        full[position] = x
      return sparse_delta_rule(*full, error=error, impl=impl, chunk_size=4)

    def loss(impl, floats):
      out, memory = run(impl, floats)
      return jnp.sum(out * out_ct) + jnp.sum(memory * mem_ct)

    floats = tuple(args[p] for p in float_positions)
    got = run("chunked", floats)
    assert got[0].dtype == jnp.float64 and got[1].dtype == jnp.float64
    _assert_close(got, run("reference", floats), 1e-9)

    grads = jax.jit(jax.grad(lambda f: loss("chunked", f)))(floats)
    ref_grads = jax.jit(jax.grad(lambda f: loss("reference", f)))(floats)
    for got_grad, ref_grad in zip(grads, ref_grads):
      assert float(jnp.abs(ref_grad).max()) > 0
      np.testing.assert_allclose(got_grad, ref_grad, rtol=1e-9, atol=1e-9)

    # Central differences along a random direction, one input at a time (the forward
    # reuses the compiled chunked program; the loss is summed in numpy).
    def numpy_loss(floats):
      out, memory = run("chunked", floats)
      return np.sum(np.asarray(out) * out_ct) + np.sum(np.asarray(memory) * mem_ct)

    eps = 1e-5
    for position, (x, grad) in enumerate(zip(floats, grads)):
      direction = np.random.default_rng(position).standard_normal(x.shape)
      shifted = lambda sign: tuple(y + sign * eps * direction if i == position else y
                                   for i, y in enumerate(floats))
      numeric = (numpy_loss(shifted(1)) - numpy_loss(shifted(-1))) / (2 * eps)
      analytic = np.sum(np.asarray(grad) * direction)
      np.testing.assert_allclose(analytic, numeric, rtol=1e-7, atol=1e-9)


def test_gradient_memory_stays_within_ten_tables():
  """Undo-writes backward: no table per chunk. Compiled only, never run."""
  batch, heads, num_slots, value_dim, seq_len, writes = 1, 1, 2**16, 64, 2048, 16
  tok = (batch, seq_len, heads)
  f32 = lambda *shape: jax.ShapeDtypeStruct(shape, jnp.float32)
  i32 = jax.ShapeDtypeStruct((*tok, writes), jnp.int32)
  memory = f32(batch, heads, num_slots, value_dim)

  def loss(memory, write_w, v, beta, g, read_w, write_idx, read_idx):
    out, _ = sparse_delta_rule(memory, write_idx, write_w, v, beta, g, read_idx, read_w,
                               chunk_size=64)
    return jnp.sum(out)

  grad = jax.jit(jax.grad(loss, argnums=(0, 1, 2, 3, 4, 5)))
  compiled = grad.lower(memory, f32(*tok, writes), f32(*tok, value_dim), f32(*tok), f32(*tok),
                        f32(*tok, writes), i32, i32).compile()
  analysis = compiled.memory_analysis()
  table_bytes = batch * heads * num_slots * value_dim * 4
  used = analysis.temp_size_in_bytes + analysis.output_size_in_bytes
  assert used < 10 * table_bytes, f"{used / table_bytes:.1f} tables"


def _valid_args():
  return random_inputs(40, batch=1, seq_len=3, heads=2, num_slots=6, value_dim=2, writes=2,
                       reads=2)


@pytest.mark.parametrize("position,bad,match", [
    (1, lambda x: x.astype(jnp.float32), "write_idx must have an integer dtype"),
    (6, lambda x: x.astype(jnp.float32), "read_idx must have an integer dtype"),
    (2, lambda x: x[..., :1], "write_w must have write_idx's shape"),
    (7, lambda x: x[..., :1], "read_w must have read_idx's shape"),
    (3, lambda x: x[:, :, :1], "v must be"),
    (4, lambda x: x[:, :2], "beta must be"),
    (5, lambda x: x[..., None], "g must be"),
    (0, lambda x: x[..., :1], "memory must be"),
    (0, lambda x: x[0, 0], "memory must be"),
    (6, lambda x: x[:, :2], "read_idx must be"),
])
def test_rejects_mismatched_inputs(position, bad, match):
  args = list(_valid_args())
  args[position] = bad(args[position])
  with pytest.raises(ValueError, match=match):
    sparse_delta_rule(*args)


def test_rejects_more_writes_than_slots():
  args = list(random_inputs(41, batch=1, seq_len=2, heads=1, num_slots=3, writes=3))
  args[0] = args[0][..., :2, :]
  with pytest.raises(ValueError, match="writes per token exceed N"):
    sparse_delta_rule(*args)


@pytest.mark.parametrize("kwargs,match", [
    (dict(error="dense"), r"error must be one of \('shared', 'per_slot'\)"),
    (dict(chunk_size=0), "chunk_size must be a positive int"),
    (dict(chunk_size=8.0), "chunk_size must be a positive int"),
    (dict(impl="triton"), r"impl must be one of \('auto', 'reference', 'chunked', 'pallas', "
                          r"'pallas_gpu', 'pallas_tpu'\)"),
    (dict(impl="pallas", chunk_size=8), r"chunk_size must be a power of two in \[16, 256\]"),
    (dict(impl="pallas"), "Dv must be a multiple of 16"),
    (dict(impl="pallas_gpu"), "Dv must be a multiple of 16"),
    (dict(impl="pallas_tpu"), "Dv a multiple of 128"),
    (dict(impl="pallas_tpu", chunk_size=512), r"chunk_size must be a power of two in \[16, 256\]"),
])
def test_rejects_invalid_options(kwargs, match):
  with pytest.raises(ValueError, match=match):
    sparse_delta_rule(*_valid_args(), **kwargs)


def test_step_rejects_a_time_axis_and_bad_error_form():
  args = _valid_args()
  with pytest.raises(ValueError, match=r"write_idx must be \[B, H, W\]"):
    sparse_delta_step(*args)
  with pytest.raises(ValueError, match="error must be one of"):
    sparse_delta_step(args[0], *(np.asarray(x)[:, 0] for x in args[1:]), error="both")



def _pallas_args(seed, value_dim=16, **kwargs):
  return random_inputs(seed, value_dim=value_dim, **kwargs)


@pytest.mark.parametrize("error,shared_memory,impl,value_dim",
                         [(error, error == "shared", "pallas", 16) for error in ERRORS]
                         + [("per_slot", True, "pallas_tpu", 128)])
def test_pallas_matches_the_reference(error, shared_memory, impl, value_dim, monkeypatch):
  """Each kernel family in interpret mode, through the op ("pallas" off TPU is the GPU
  family): T = 23 is padded to a 32-token chunk (the GPU kernels' unwritten buffers start as
  NaN, so the padding tokens' gradients must be written too). The TPU family (the slowest here) once,
  with the forms its kernel test lacks (`tests/pallas_kernels/sparse_delta/
  test_scan_pallas_tpu.py`: the shared error, no shared table): the per-slot error and a
  shared table."""
  poison_uninitialized(monkeypatch)
  args = _pallas_args(30, value_dim, shared_memory=shared_memory, full_overwrite=False)
  got = sparse_delta_rule(*args, error=error, impl=impl, chunk_size=32)
  want = sparse_delta_rule(*args, error=error, impl="reference")
  _assert_close(got, want, 1e-5)

  rng = np.random.default_rng(31)
  out_ct = jnp.asarray(rng.standard_normal(want[0].shape), jnp.float32)

  def loss(impl, memory, v, write_w):
    full = list(args)
    full[0], full[3], full[2] = memory, v, write_w
    out, final = sparse_delta_rule(*full, error=error, impl=impl, chunk_size=32)
    return jnp.sum(out * out_ct) + jnp.sum(jnp.sin(final))

  floats = (args[0], args[3], args[2])
  grads = jax.grad(functools.partial(loss, impl), argnums=(0, 1, 2))(*floats)
  ref_grads = jax.grad(functools.partial(loss, "reference"), argnums=(0, 1, 2))(*floats)
  for got_grad, ref_grad in zip(grads, ref_grads):
    np.testing.assert_allclose(got_grad, ref_grad, rtol=1e-4, atol=1e-5)


def test_auto_on_gpu_keeps_float64_inputs_off_the_kernels(monkeypatch):
  """A float64 input anywhere (here beta) makes the op accumulate in float64, which the
  kernels cannot: "auto" must then pick the XLA path, not fail."""
  monkeypatch.setattr(platform, "on_gpu", lambda: True)
  with jax.enable_x64(True):
    args = list(_pallas_args(34))
    args[4] = jnp.asarray(args[4], jnp.float64)
    out, _ = sparse_delta_rule(*args, impl="auto", chunk_size=16)
    assert out.dtype == args[3].dtype


def test_pallas_picks_the_kernel_family_of_the_platform(monkeypatch):
  """On a TPU "pallas" is the TPU kernels and "auto" stays on the XLA path (the TPU kernels
  never ran on a TPU); forced families run wherever asked."""
  args = _pallas_args(35, value_dim=128)
  monkeypatch.setattr(platform, "on_tpu", lambda: True)
  assert resolve_impl("pallas", args[0], args[3], chunk_size=32) == "pallas_tpu"
  assert resolve_impl("auto", args[0], args[3], chunk_size=32) == "chunked"
  assert resolve_impl("pallas_gpu", args[0], args[3], chunk_size=32) == "pallas_gpu"
  with pytest.raises(ValueError, match="impl='pallas' cannot run these inputs: the TPU "
                     "kernels take a float32 table"):
    sparse_delta_rule_chunked(args[0].astype(jnp.bfloat16), *args[1:], impl="pallas")


def test_auto_picks_the_kernels_only_on_gpu_and_pallas_rejects_float64():
  args = _pallas_args(32)
  on_gpu = jax.default_backend() == "gpu"
  assert resolve_impl("auto", args[0], args[3], chunk_size=64) == (
      "pallas_gpu" if on_gpu else "chunked")
  assert resolve_impl("auto", args[0], args[3], chunk_size=48) == "chunked"  # not 2^k
  assert resolve_impl("pallas", args[0], args[3], chunk_size=64) == (
      "pallas_tpu" if jax.default_backend() == "tpu" else "pallas_gpu")
  with jax.enable_x64(True):
    args64 = _pallas_args(33, dtype=jnp.float64)
    with pytest.raises(ValueError, match="float64"):
      sparse_delta_rule(*args64, impl="pallas", chunk_size=16)


def test_a_bfloat16_table_gives_gradients_within_a_few_bf16_roundings():
  """The chunked backward keeps a bf16 table's cotangent in bf16 between chunks (float32
  inside each chunk): every gradient stays within a few bf16 roundings of float32."""
  args = list(random_inputs(17, seq_len=48, full_overwrite=False))
  write_idx, read_idx = args[1], args[6]
  out_ct = np.random.default_rng(18).standard_normal(args[3].shape).astype(np.float32)

  def grads(table_dtype, impl):
    def loss(memory, write_w, v, beta, g, read_w):
      out, final = sparse_delta_rule(memory.astype(table_dtype), write_idx, write_w, v, beta,
                                     g, read_idx, read_w, chunk_size=16, impl=impl)
      return jnp.sum(out * out_ct) + jnp.sum(jnp.square(final.astype(jnp.float32)))
    differentiable = [args[i] for i in (0, 2, 3, 4, 5, 7)]
    return jax.grad(loss, argnums=tuple(range(6)))(*differentiable)

  for got, want in zip(grads(jnp.bfloat16, "chunked"), grads(jnp.float32, "reference")):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert np.linalg.norm(got - want) <= 5e-3 * np.linalg.norm(want)


@pytest.mark.parametrize("error", ["shared", "per_slot"])
def test_plan_gradients_are_the_same_with_the_pair_weight_kernel(error):
  """Phase 1 with the pair-weight kernels (interpret mode) differentiates as XLA's
  autodiff of the XLA forward, on real plans: repeated slots, reads of unwritten slots, a
  padded chunk, 4 writes and 5 reads per token (entries padded to powers of two)."""
  args = random_inputs(23, seq_len=21, num_slots=40, writes=4, reads=5)
  inputs, _ = checks.canonicalize_inputs(*args, time_axis=True, broadcast_memory=False)
  num_slots = inputs.memory.shape[-2]
  floats = (inputs.write_w, inputs.v, inputs.beta, inputs.g, inputs.read_w)
  weights = jax.tree.map(
      lambda x: jax.random.normal(jax.random.PRNGKey(x.size), x.shape),
      jax.jit(functools.partial(chunk.plan_chunks, num_slots=num_slots, chunk_size=16,
                                error=error))(*inputs[1:]).coefs)

  def grads(pair_impl):
    def loss(write_w, v, beta, g, read_w):
      coefs = chunk.plan_chunks(inputs.write_idx, write_w, v, beta, g, inputs.read_idx,
                                read_w, num_slots=num_slots, chunk_size=16, error=error,
                                pair_impl=pair_impl).coefs
      return sum(jnp.sum(c * w) for c, w in zip(jax.tree.leaves(coefs),
                                                 jax.tree.leaves(weights)))
    return jax.jit(jax.grad(loss, argnums=tuple(range(5))))(*floats)

  for got, want in zip(grads("pallas"), grads("xla")):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5,
                               atol=1e-5 * float(jnp.max(jnp.abs(want))))
    assert float(jnp.max(jnp.abs(want))) > 0


def test_plan_ids_are_numpys_unique_and_stable_sort():
  """Phase 1's integer plan per chunk: the sorted unique written slots (then distinct
  out-of-range padding ids), each write's and each read's position among them (U for a
  read of a slot the chunk does not write), and the stable slot order of the write and
  read entries that the kernels' layouts reuse."""
  args = random_inputs(19, seq_len=20)
  inputs, _ = checks.canonicalize_inputs(*args, time_axis=True, broadcast_memory=False)
  num_slots = inputs.memory.shape[-2]
  plan = jax.jit(functools.partial(chunk.plan_chunks, num_slots=num_slots, chunk_size=8,
                                   error="shared"))  # one compile, not op-by-op dispatch
  ids = jax.tree.map(np.asarray, plan(*inputs[1:]).ids)
  write_idx = np.asarray(inputs.write_idx)  # [B, T, H, W]
  batch, seq_len, heads, writes = write_idx.shape
  for b, h, c in np.ndindex(batch, heads, ids.slots.shape[2]):
    tokens = write_idx[b, c * 8:(c + 1) * 8, h]
    if len(tokens) < 8:  # the padded last chunk writes ids 0..W-1 for its padding tokens
      tokens = np.concatenate([tokens, np.tile(np.arange(writes), (8 - len(tokens), 1))])
    unique, position = np.unique(tokens, return_inverse=True)
    slots = np.asarray(ids.slots[b, h, c])
    np.testing.assert_array_equal(slots[:len(unique)], unique)
    np.testing.assert_array_equal(slots[len(unique):],
                                  num_slots + np.arange(len(unique), tokens.size))
    np.testing.assert_array_equal(np.asarray(ids.write_pos[b, h, c]).reshape(-1),
                                  position.reshape(-1))
    np.testing.assert_array_equal(np.asarray(ids.write_order[b, h, c]),
                                  np.argsort(tokens.reshape(-1), kind="stable"))
    np.testing.assert_array_equal(
        np.asarray(ids.read_order[b, h, c]),
        np.argsort(np.asarray(ids.read_idx[b, h, c]).reshape(-1), kind="stable"))
    read_idx = np.asarray(ids.read_idx[b, h, c])
    found = np.searchsorted(unique, read_idx).clip(max=len(unique) - 1)
    np.testing.assert_array_equal(np.asarray(ids.read_pos[b, h, c]),
                                  np.where(unique[found] == read_idx, found, tokens.size))


def test_segment_sums_stay_within_their_segments():
  """Phase 1's cumulative logs: inclusive sums within contiguous segments of at most
  `max_length` entries, against numpy's per-segment cumsum."""
  rng = np.random.default_rng(3)
  lengths = np.concatenate([rng.integers(1, 9, 40), [8]])
  segment_start = np.repeat(np.cumsum(lengths) - lengths, lengths)
  x = rng.standard_normal(lengths.sum()).astype(np.float32)
  want = np.concatenate([np.cumsum(part) for part in np.split(x, np.cumsum(lengths)[:-1])])
  got = chunk._segment_cumsum(jnp.asarray(x), jnp.asarray(segment_start), 8)
  np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("num_slots", [2**20, 2**27])
def test_plan_ids_same_whichever_sort_key_fits(num_slots):
  """The sort packs (slot, token, entry) into one int32 key where it fits (the test's own
  N), else (slot, token) with the entries beside it (2**20: 2**20 * 2C * E > 2**31 - 1),
  else two keys (2**27 * 2C > 2**31 - 1); the orders and positions are the same."""
  args = random_inputs(19, seq_len=16)
  inputs, _ = checks.canonicalize_inputs(*args, time_axis=True, broadcast_memory=False)
  small = inputs.memory.shape[-2]
  entries = 16 * (inputs.write_idx.shape[-1] + inputs.read_idx.shape[-1])
  assert small * 32 * entries < 2**31 < num_slots * 32 * entries

  def ids(num_slots):
    plan = jax.jit(functools.partial(chunk.plan_chunks, num_slots=num_slots, chunk_size=16,
                                     error="shared"))(*inputs[1:])
    return jax.tree.map(np.asarray, plan.ids)

  packed, other = ids(small), ids(num_slots)
  for name in ("write_pos", "write_order", "read_order", "read_pos"):
    np.testing.assert_array_equal(getattr(other, name), getattr(packed, name))
  real = packed.slots < small
  np.testing.assert_array_equal(other.slots[real], packed.slots[real])


def test_sort_order_is_stable_by_slot_then_minor_on_every_key_form():
  """`_sort_order` against numpy's stable lexsort, with repeated (slot, minor) pairs, for
  the packed key, the key beside the indices and the two keys."""
  rng = np.random.default_rng(5)
  slot = rng.integers(0, 6, 64).astype(np.int32)
  minor = rng.integers(0, 4, 64).astype(np.int32)
  want = np.lexsort((minor, slot))
  for num_slots in (8, 2**22, 2**29):  # 8 * 4 * 64 fits; 2**22 * 4 does; 2**29 * 4 not
    got = chunk._sort_order(jnp.asarray(slot), jnp.asarray(minor), num_slots=num_slots,
                            chunk=2)
    np.testing.assert_array_equal(np.asarray(got), want)
