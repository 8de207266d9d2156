"""The product-key top-k implementations against a brute-force top-k over all S^2 sums.

The GPU kernel runs in interpret mode on CPU (its semantics), the TPU kernel in TPU
interpret mode with the race detector on; the `gpu` test compiles the GPU kernel, and the
TPU kernel is lowered for TPU (no TPU was available to run it compiled).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pallas_kernels.product_key import topk_pallas
from pallas_kernels.product_key import topk_pallas_tpu
from pallas_kernels.product_key import topk_xla
from tests.pallas_kernels import tpu_interpret

IMPLS = {"xla": topk_xla.product_key_topk, "pallas": topk_pallas.product_key_topk,
         "pallas_tpu": functools.partial(topk_pallas_tpu.product_key_topk,
                                         interpret=tpu_interpret.RACE_CHECKED)}
COMPILED_ON_GPU = ("xla", "pallas")
# The compiled `gpu` tests' configs: one of each kind the benchmark sweep times (WORKSPACE.md);
# the third was the default in session 35, lazy tails are the default since session 36, the
# frontier final selection since session 40. After the threshold forms: the default, its
# tiling where k >= 64, the tournament (the default of sessions 17-39), the default without
# the exact-order check (session 41).
GPU_CONFIGS = [
    topk_pallas.KernelConfig(block_rows=4, num_warps=2, pick="argmax", lazy_tail=False),
    topk_pallas.KernelConfig(half_select="groups", group_size=16, block_rows=8, pick="max_min",
                             lazy_tail=False),
    topk_pallas.KernelConfig(half_select="groups", group_size=16, block_rows=4, pick="argmax",
                             lazy_tail=False),
    topk_pallas.KernelConfig(half_select="groups", group_size=32, block_rows=16, num_warps=2,
                             pick="max_min", lazy_tail=False),
    topk_pallas.KernelConfig(half_select="scan", block_rows=8, num_warps=2, pick="max_min"),
    topk_pallas.KernelConfig(half_select="threshold", final_select="threshold", block_rows=1),
    topk_pallas.KernelConfig(half_select="threshold", final_select="threshold", num_warps=2),
    # the groups halves with the threshold final selection: a decode tiling (script 48d)
    topk_pallas.KernelConfig(final_select="threshold", block_rows=1, num_warps=4),
    topk_pallas.KernelConfig(),
    topk_pallas.KernelConfig(block_rows=2),
    topk_pallas.KernelConfig(final_select="tournament"),
    topk_pallas.KernelConfig(exact_order=False),
    # the frontier from threshold halves (session 68: their keys logged by `_log_keys`)
    topk_pallas.KernelConfig(block_rows=2, half_select="threshold"),
    # the group bests found on the float scores (the default from S = 1,024 on)
    topk_pallas.KernelConfig(float_group_bests=True),
]


def config_id(config: topk_pallas.KernelConfig) -> str:
  """A test id usable in `pytest -k`: the fields that differ from the default config."""
  default = topk_pallas.KernelConfig()
  return "_".join(f"{field}-{value}" for field, value in config._asdict().items()
                  if value != getattr(default, field)) or "default"


def exact_residuals(first: np.ndarray, second: np.ndarray, sums: np.ndarray) -> np.ndarray:
  """first + second - sums exactly, by TwoSum in numpy float32 (written out apart from
  `topk_xla.sum_residual`); for an infinite sum the finite score, or the sum itself where
  both are infinite (no sum here overflows)."""
  with np.errstate(invalid="ignore"):
    b_virtual = sums - first
    residual = (first - (sums - b_virtual)) + (second - b_virtual)
  residual = np.where(np.isfinite(sums), residual, np.where(
      np.isfinite(first), first, np.where(np.isfinite(second), second, sums)))
  return np.where(residual != 0, residual, np.float32(0)).astype(np.float32)


def brute_force(scores: np.ndarray, k: int):
  """(ids, sums) of the k largest exact sums over all S^2 slots (float32 sum, then its
  TwoSum residual), lowest id first on ties; sums rounded to float32."""
  s = scores.shape[-1] // 2
  wide = scores.astype(np.float32)
  first, second = np.broadcast_arrays(wide[..., :s, None], wide[..., None, s:])
  first, second = (x.reshape(*scores.shape[:-1], s * s) for x in (first, second))
  sums = first + second
  residuals = exact_residuals(first, second, sums)
  sums = np.where(sums == 0, np.float32(0), sums)  # -0 equals +0
  ids = np.broadcast_to(np.arange(s * s), sums.shape)
  order = np.lexsort((ids, -residuals, -sums), axis=-1)[..., :k]
  return order.astype(np.int32), np.take_along_axis(sums, order, axis=-1)


def assert_matches_brute_force(idx, logits, scores, k, ids=True):
  """ids equal brute force's (ids=False: not checked, for selections by (key, slot), whose
  ids may differ where sums tie by rounding); logits equal its float32 sums rounded to the
  scores' dtype."""
  want_idx, want_sums = brute_force(np.asarray(scores.astype(jnp.float32)), k)
  if ids:
    np.testing.assert_array_equal(np.asarray(idx), want_idx, err_msg=str(scores.dtype))
  np.testing.assert_array_equal(np.asarray(logits.astype(jnp.float32)),
                                np.asarray(jnp.asarray(want_sums).astype(scores.dtype)
                                           .astype(jnp.float32)))


def assert_matches_twin(scores, k, config):
  """The kernel under `config` gives the XLA twin's ids and logits on `scores`; returns
  them (numpy)."""
  idx, logits = jax.jit(functools.partial(topk_pallas.product_key_topk, k=k,
                                          config=config))(scores)
  want_idx, want_logits = topk_xla.product_key_topk(scores, k)
  np.testing.assert_array_equal(np.asarray(idx), np.asarray(want_idx))
  np.testing.assert_array_equal(np.asarray(logits), np.asarray(want_logits))
  return np.asarray(idx), np.asarray(logits)


def random_scores(seed, sub_keys, dtype, rows=3):
  """Rows of random scores; row 0 rounded to integers (many tied sums), row 1 with a
  constant first half (every pair's order decided by ids within the second half)."""
  rng = np.random.default_rng(seed)
  scores = rng.standard_normal((rows, 2 * sub_keys)).astype(np.float32)
  scores[0] = np.round(scores[0] * 2)
  scores[1, :sub_keys] = 0.5
  return jnp.asarray(scores, dtype)


# (32, 3): one candidate and two lazy tails, so the final tournament runs out of candidates
# before its last round (its reload then names a group past them and is clamped).
CASES = ([(4, k) for k in (1, 8, 16)] + [(32, k) for k in (1, 3, 8, 32, 64, 128)]
         + [(512, k) for k in (8, 32, 64, 128)] + [(1024, k) for k in (32, 64, 128)]
         + [(6, 11), (6, 36)])
# The TPU kernel (race-checked in interpret mode, the slowest here) at one case of each
# kind: k = S^2, a lazy-tail-like small k, k > S, the benchmark's shape, k = 128 at S = 1,024,
# S not a power of two.
TPU_CASES = [(4, 16), (32, 3), (32, 64), (512, 32), (1024, 128), (6, 11)]


@pytest.mark.parametrize("impl,sub_keys,k",
                         [(impl, *case) for impl in ("pallas", "xla") for case in CASES]
                         + [("pallas_tpu", *case) for case in TPU_CASES])
def test_matches_brute_force(impl, sub_keys, k):
  for dtype in (jnp.float32, jnp.bfloat16):
    scores = random_scores(sub_keys * 1000 + k, sub_keys, dtype)
    topk = jax.jit(IMPLS[impl], static_argnums=1)
    if impl == "pallas_tpu":
      idx, logits = tpu_interpret.assert_no_races(topk, scores, k)
    else:
      idx, logits = topk(scores, k)
    assert idx.dtype == jnp.int32 and logits.dtype == dtype and idx.shape == (3, k)
    assert_matches_brute_force(idx, logits, scores, k)


@pytest.mark.parametrize("impl", ["pallas", "pallas_tpu"])
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16])
def test_kernel_gradient_matches_the_xla_path(impl, dtype):
  scores = random_scores(5, 32, dtype)
  cotangent = jax.random.normal(jax.random.PRNGKey(0), (3, 24)).astype(dtype)

  def grad(fn):
    return jax.jit(jax.grad(lambda s: jnp.sum((fn(s, 24)[1] * cotangent).astype(jnp.float32))
                            ))(scores)

  got, want = grad(IMPLS[impl]), grad(topk_xla.product_key_topk)
  assert got.dtype == want.dtype == dtype
  np.testing.assert_allclose(got.astype(jnp.float32), want.astype(jnp.float32), rtol=1e-6,
                             atol=1e-6)
  assert 0 < int(jnp.sum(got != 0)) <= 2 * 24 * 3  # selected entries only


@pytest.mark.parametrize("sub_keys,k", [(512, 32), (1024, 64), (100, 128)])
def test_tpu_kernel_lowers_for_tpu(sub_keys, k):
  """65,536 rows (the benchmark's), S = 100 not a multiple of 128 lanes, bf16 scores."""
  scores = jax.ShapeDtypeStruct((65536, 2 * sub_keys), jnp.bfloat16)

  def loss(scores):
    idx, logits = topk_pallas_tpu.product_key_topk(scores, k, interpret=False)
    return jnp.sum(logits.astype(jnp.float32)) + jnp.sum(idx)

  assert tpu_interpret.tpu_custom_calls(jax.value_and_grad(loss), scores) == 1


# Non-default GPU kernel configs (results must not depend on the config): several rows per
# program (5 rows: not a multiple of 2 or 4), whole-half scans, both picks, groups smaller
# and larger than a half, with and without lazy tails, the frontier (the default) and the
# tournament, threshold selections.
CONFIGS = [
    topk_pallas.KernelConfig(half_select="scan", block_rows=4, num_warps=4, pick="argmax",
                             final_select="frontier"),
    topk_pallas.KernelConfig(half_select="groups", group_size=4, pick="max_min",
                             lazy_tail=False, final_select="frontier"),
    topk_pallas.KernelConfig(half_select="groups", group_size=8, block_rows=2, pick="argmax",
                             lazy_tail=False, final_select="tournament"),
    topk_pallas.KernelConfig(half_select="groups", group_size=64, block_rows=8, num_warps=2,
                             final_select="tournament"),
    # Lazy tails (the default): one row and several; groups of 4, far fewer than a half's
    # ranks, so many tail rounds.
    topk_pallas.KernelConfig(block_rows=1),
    topk_pallas.KernelConfig(group_size=4, block_rows=4, pick="max_min",
                             final_select="tournament"),
    topk_pallas.KernelConfig(half_select="threshold", final_select="threshold", block_rows=2),
    topk_pallas.KernelConfig(half_select="groups", group_size=8, final_select="threshold"),
    topk_pallas.KernelConfig(exact_order=False, block_rows=2),
    # the frontier from threshold halves (their picks' keys logged after them, `_log_keys`);
    # the tournament's candidate parts formed and stored one at a time
    topk_pallas.KernelConfig(block_rows=2, half_select="threshold"),
    topk_pallas.KernelConfig(final_select="tournament", form_parts_together=False),
    # the group bests found on the float scores (S = 32; S = 6 and 100 are padded: keys)
    topk_pallas.KernelConfig(float_group_bests=True, block_rows=2),
]
THRESHOLD = topk_pallas.KernelConfig(half_select="threshold", final_select="threshold")


@pytest.mark.parametrize("sub_keys,k", [(6, 11), (32, 64), (100, 16)])
@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_kernel_configs_match_brute_force(config, sub_keys, k):
  # bf16 scores at one shape per config: only the loads see the dtype.
  for dtype in (jnp.float32,) + (jnp.bfloat16,) * ((sub_keys, k) == (32, 64)):
    scores = random_scores(sub_keys + k, sub_keys, dtype, rows=5)
    idx, logits = jax.jit(functools.partial(topk_pallas.product_key_topk, config=config),
                          static_argnums=1)(scores, k)
    assert_matches_brute_force(idx, logits, scores, k)


# The frontier stores its first pick, the pair of ranks (0, 0), without a round, and its
# last round forms no head: k = 1 (no rounds), 2 (only the last) and 3, k = S^2 (every pair,
# lane 0 at rank 1 from the start), with and without lazy tails, and by (key, slot).
@pytest.mark.parametrize("sub_keys,k", [(32, 1), (32, 2), (32, 3), (4, 16), (512, 32)])
@pytest.mark.parametrize("config", [topk_pallas.KernelConfig(),
                                    topk_pallas.KernelConfig(lazy_tail=False, block_rows=2),
                                    topk_pallas.KernelConfig(exact_order=False)], ids=str)
def test_the_frontier_at_few_rounds_matches_brute_force(config, sub_keys, k):
  for dtype in (jnp.float32, jnp.bfloat16):
    scores = random_scores(sub_keys * 7 + k, sub_keys, dtype, rows=5)
    idx, logits = jax.jit(functools.partial(topk_pallas.product_key_topk, config=config),
                          static_argnums=1)(scores, k)
    assert_matches_brute_force(idx, logits, scores, k, ids=config.exact_order)


@pytest.mark.parametrize("lazy_tail", [False, True])
@pytest.mark.parametrize("packed_id_bits", [31, 0])
@pytest.mark.parametrize("final_select", ["frontier", "tournament"])
def test_final_selections_with_and_without_ids_packed_into_slots(final_select,
                                                                 packed_id_bits, lazy_tail,
                                                                 monkeypatch):
  """Where slot and lane (tournament) or successor (frontier) fit in 31 bits together
  (every shape here), the round's pick names the winning group or the entry to load next;
  else a reduction finds it: 0 bits forces that path. Tied rows (random_scores' rows 0
  and 1) decide by the lowest slot, lazy tails' heads against the other candidates too."""
  monkeypatch.setattr(topk_pallas, "_PACKED_ID_BITS", packed_id_bits)
  jax.clear_caches()  # traces of the same shapes from other tests took the other path
  config = topk_pallas.KernelConfig(block_rows=2, lazy_tail=lazy_tail,
                                    final_select=final_select)
  # The benchmark's shape where ids are packed, as they are there; small ones otherwise.
  shapes = [(6, 11), (32, 64)] + [(512, 32)] * (packed_id_bits == 31)
  for sub_keys, k in shapes:
    scores = random_scores(sub_keys + k + 1, sub_keys, jnp.float32, rows=5)
    topk = functools.partial(topk_pallas.product_key_topk, k=k, config=config)
    # Only the packing shifts left.
    assert ("shift_left" in str(jax.make_jaxpr(topk)(scores))) == (packed_id_bits == 31)
    assert_matches_brute_force(*topk(scores), scores, k)
  jax.clear_caches()


def rounding_tied_scores(sub_keys: int) -> jnp.ndarray:
  """Rows whose sums tie by rounding: distinct second-half scores, lowest at the lowest
  index, under a first-half score that swamps them (every sum with it one float32), so
  the pairs (0, j) of ranks come highest slot first; a first half of -inf but at index 0
  (every pair of ranks from 1 on sums to -inf, its ranks in the second half's score
  order); a random row beside them."""
  rng = np.random.default_rng(sub_keys)
  scores = rng.standard_normal((3, 2 * sub_keys)).astype(np.float32)
  scores[0, :sub_keys] = -1.0
  scores[0, 0] = 1e4
  scores[0, sub_keys:] = 1e-6 * np.arange(1, sub_keys + 1)
  scores[1, 1:sub_keys] = -np.inf
  return jnp.asarray(scores)


@pytest.mark.parametrize("sub_keys,k,lazy_tail", [(8, 32, True), (32, 32, False),
                                                  (8, 48, False), (32, 32, True)])
@pytest.mark.parametrize("final_select,half_select", [("frontier", "groups"),
                                                      ("frontier", "scan"),
                                                      ("tournament", "groups")])
def test_selections_take_the_larger_exact_sum_among_sums_tied_by_rounding(
    final_select, half_select, sub_keys, k, lazy_tail):
  """Equal float32 sums from unequal scores (`rounding_tied_scores`) go larger exact sum
  first, as in brute force: the frontier's lanes and the lazy tails come in that order,
  where heads of different exact sums tie in key the frontier compares their residuals and
  the tournament's program runs `_exact_frontier`.
  (S = 8, k = 32: every rank of a half is ranked, so no tails either way; S = 32 with lazy
  tails: the second half's ranks from 16 on are a tail, found against the rule until
  session 41.)"""
  scores = rounding_tied_scores(sub_keys)
  config = topk_pallas.KernelConfig(final_select=final_select, half_select=half_select,
                                    block_rows=2, lazy_tail=lazy_tail)
  idx, logits = jax.jit(functools.partial(topk_pallas.product_key_topk, config=config),
                        static_argnums=1)(scores, k)
  assert_matches_brute_force(idx, logits, scores, k)
  if (sub_keys, k) == (32, 32) and not lazy_tail and half_select == "groups":
    idx, logits = jax.jit(functools.partial(topk_pallas.product_key_topk, config=THRESHOLD),
                          static_argnums=1)(scores, k)
    assert_matches_brute_force(idx, logits, scores, k)


def swamped_scores(seed: int, sub_keys: int, rows: int) -> jnp.ndarray:
  """Rows where each half has one score of 1e4 and the rest multiples of 2e-4 (the other
  half's best is 1e4, 0.5, 3e-4 or 1e-4): sums with a 1e4 round to a few values, in every
  order of slots. Halves swapped in odd rows."""
  rng = np.random.default_rng(seed)
  scores = (rng.integers(-3, 4, (rows, 2 * sub_keys)) * 2e-4).astype(np.float32)
  scores[np.arange(rows), rng.integers(0, sub_keys, rows)] = 1e4
  scores[np.arange(rows), sub_keys + rng.integers(0, sub_keys, rows)] = rng.choice(
      [1e4, 0.5, 1e-4, 3e-4], rows)
  scores[1::2] = np.concatenate([scores[1::2, sub_keys:], scores[1::2, :sub_keys]], axis=-1)
  return jnp.asarray(scores)


# The frontier's first (exact by construction: no check; the second with the group bests
# found on the float scores, so -0.0 and +0.0 meet there), then the checked selections.
SWAMPED_CONFIGS = [topk_pallas.KernelConfig(block_rows=2),
                   topk_pallas.KernelConfig(block_rows=2, lazy_tail=False,
                                            float_group_bests=True),
                   topk_pallas.KernelConfig(block_rows=2, half_select="threshold"),
                   topk_pallas.KernelConfig(block_rows=2, final_select="tournament"),
                   topk_pallas.KernelConfig(block_rows=2, half_select="threshold",
                                            final_select="threshold")]


@pytest.mark.parametrize("config", SWAMPED_CONFIGS, ids=config_id)
@pytest.mark.parametrize("sub_keys,k", [(16, 8), (8, 6)])
def test_kernel_matches_brute_force_and_the_twin_where_rounding_ties_sums(config, sub_keys,
                                                                           k):
  """On `swamped_scores` the kernel, the XLA twin and brute force agree on ids and logits
  (before session 41 the lazy tails differed in 788 of 1,024 such rows at S = 16, k = 8,
  and the twin from brute force too)."""
  scores = swamped_scores(4, sub_keys, 256)
  assert_matches_brute_force(*assert_matches_twin(scores, k, config), scores, k)


@pytest.mark.parametrize("config", SWAMPED_CONFIGS[3:], ids=config_id)
def test_the_exact_order_check_fires_and_is_needed(config, monkeypatch):
  """With `_exact_frontier` replaced by nothing, the kernel differs from the twin in some
  `swamped_scores` rows (S = 16, k = 8): the check that runs it fires there, and the
  selection by (key, slot) alone would miss the exact order. (The tournament and the
  threshold selections; the frontier has no check, see the next test.)"""
  scores = swamped_scores(4, 16, 256)
  want_idx, _ = topk_xla.product_key_topk(scores, 8)
  monkeypatch.setattr(topk_pallas, "_exact_frontier", lambda *args: None)
  jax.clear_caches()  # other tests traced the kernel with the real one
  without = jax.jit(functools.partial(topk_pallas.product_key_topk, k=8, config=config))
  assert (np.asarray(without(scores)[0]) != np.asarray(want_idx)).any(axis=-1).sum() > 0
  jax.clear_caches()


def test_the_frontier_is_exact_with_no_fallback(monkeypatch):
  """The default (the frontier with lazy tails) compares heads in the exact order, so it
  holds no check and no `_exact_frontier`, whose code alone cost it about 8% on the H200
  (WORKSPACE.md, issue 12, session 42), and still matches the twin on `swamped_scores`."""
  def fails(*args, **kwargs):
    raise AssertionError("the frontier traced a fallback")

  monkeypatch.setattr(topk_pallas, "_exact_frontier", fails)
  monkeypatch.setattr(topk_pallas, "_exact_order_missed", fails)
  jax.clear_caches()  # other tests traced the kernel with the real ones
  assert_matches_twin(swamped_scores(5, 16, 256), 8, SWAMPED_CONFIGS[0])
  jax.clear_caches()


def test_the_frontier_needs_its_key_ties_broken_by_residuals(monkeypatch):
  """With `_break_key_ties` keeping the pick by (key, slot), the default frontier differs
  from the twin on `swamped_scores`, so the residuals it computes there are what makes its
  order exact (the previous test: with them it matches)."""
  monkeypatch.setattr(topk_pallas, "_break_key_ties",
                      lambda *args: (args[5], jnp.zeros(args[5].shape, jnp.float32), None))
  jax.clear_caches()  # other tests traced the kernel with the real one
  scores = swamped_scores(5, 16, 256)
  idx, _ = jax.jit(functools.partial(topk_pallas.product_key_topk, k=8,
                                     config=SWAMPED_CONFIGS[0]))(scores)
  want_idx, _ = topk_xla.product_key_topk(scores, 8)
  assert not np.array_equal(np.asarray(idx), np.asarray(want_idx))
  jax.clear_caches()


def bf16_grid_scores_with_a_mixed_tie(seed: int, sub_keys: int, rows: int, mixed_row: int):
  """Normal scores rounded to bfloat16, held in float32 (the layer's with bf16
  activations): the best sums are exact, and most rows tie among their best k + 1. Row
  `mixed_row` instead ties an exact sum with an inexact one: first half (2^24, 2^24 - 1),
  second half (0, 1.5), the rest -1e3: its best sums are slot 1 (2^24 + 1.5, rounded to
  2^24 + 2), slot S + 1 (2^24 + 0.5, inexact, rounded to 2^24) and slot 0 (2^24, exact),
  in that exact order, which the lowest id would reverse."""
  rng = np.random.default_rng(seed)
  scores = rng.standard_normal((rows, 2 * sub_keys)).astype(np.float32)
  scores = np.array(jnp.asarray(scores).astype(jnp.bfloat16).astype(jnp.float32))
  scores[mixed_row] = -1e3
  scores[mixed_row, :2] = [2.0**24, 2.0**24 - 1]
  scores[mixed_row, sub_keys:sub_keys + 2] = [0.0, 1.5]
  return jnp.asarray(scores)


@pytest.mark.parametrize("config", SWAMPED_CONFIGS[:3], ids=config_id)
def test_the_frontier_breaks_ties_of_exact_and_inexact_sums(config):
  """The frontier skips residuals where every tied sum is exact (`_break_key_ties`): on
  rows of exact sums with many ties, and on a row where an exact sum ties an inexact one
  of a higher slot, it matches the twin and brute force."""
  sub_keys, k = 16, 8
  scores = bf16_grid_scores_with_a_mixed_tie(6, sub_keys, rows=7, mixed_row=3)
  idx, logits = assert_matches_twin(scores, k, config)
  assert list(idx[3, :3]) == [1, sub_keys + 1, 0]
  assert_matches_brute_force(idx, logits, scores, k)


@pytest.mark.parametrize("config", SWAMPED_CONFIGS, ids=config_id)
def test_zero_sums_give_positive_zero_logits(config):
  """Rows of -0.0, +0.0 and -1.0 (the best sums are zeros of either sign: -0.0 + -0.0 is
  -0.0): the logits are +0.0 wherever the sum is zero, as the twin's, bit for bit (the
  frontier stores the sum its taken key stands for; the other selections reload the
  scores)."""
  rng = np.random.default_rng(8)
  scores = rng.choice(np.float32([-0.0, 0.0, -1.0]), (6, 32)).astype(np.float32)
  scores[0] = -0.0
  _, logits = assert_matches_twin(jnp.asarray(scores), 8, config)
  want_logits = np.asarray(topk_xla.product_key_topk(jnp.asarray(scores), 8)[1])
  assert (logits == 0).sum() > 20 and not np.signbit(logits[logits == 0]).any()
  np.testing.assert_array_equal(np.signbit(logits), np.signbit(want_logits))


@pytest.mark.parametrize("config", SWAMPED_CONFIGS, ids=config_id)
def test_rows_with_infinities_match_the_twin(config):
  """Rows with +inf and -inf among normal scores (every third rounded to integers): sums
  of an infinity tie by key whatever the other score, and the exact order ranks them by it
  (`sum_residual`: the finite score), so the frontier's residuals, formed from the scores
  it keeps in registers, must handle them as the twin's do."""
  rng = np.random.default_rng(5)
  scores = rng.standard_normal((64, 32)).astype(np.float32)
  draw = rng.random(scores.shape)
  scores[draw < 0.1], scores[(draw >= 0.1) & (draw < 0.2)] = np.inf, -np.inf
  scores[::3] = np.round(scores[::3])
  assert_matches_twin(jnp.asarray(scores), 8, config)


def test_without_the_exact_order_check_only_ids_of_rounding_ties_differ():
  """`exact_order=False` on `swamped_scores`: the logits equal the twin's everywhere, the
  ids differ in some rows (where different sums round to one float32), and each such row
  holds the same slots with each logit or differs only at the last logit's value."""
  scores = swamped_scores(4, 16, 256)
  config = topk_pallas.KernelConfig(block_rows=2, exact_order=False)
  idx, logits = jax.jit(functools.partial(topk_pallas.product_key_topk, k=8, config=config))(
      scores)
  want_idx, want_logits = topk_xla.product_key_topk(scores, 8)
  np.testing.assert_array_equal(np.asarray(logits), np.asarray(want_logits))
  idx, want_idx, logits = np.asarray(idx), np.asarray(want_idx), np.asarray(logits)
  assert (idx != want_idx).any(axis=-1).sum() > 0
  for row in np.flatnonzero((idx != want_idx).any(axis=-1)):
    for value in np.unique(logits[row][logits[row] > logits[row, -1]]):
      at = logits[row] == value
      assert set(idx[row, at]) == set(want_idx[row, at])


@pytest.mark.parametrize("sub_keys,k", [(4, 16), (32, 32), (128, 64)])
def test_threshold_selection_takes_the_lowest_ids_among_ties(sub_keys, k):
  """Rows where the k-th best sum is tied with many others (a constant row: every sum; a
  row of few distinct values), so the ids decide, next to -inf scores and a random row."""
  rng = np.random.default_rng(sub_keys + k)
  scores = rng.standard_normal((4, 2 * sub_keys)).astype(np.float32)
  scores[0] = 0.25
  scores[1] = rng.integers(-1, 2, 2 * sub_keys) * 0.5
  scores[2, ::3] = -np.inf
  scores = jnp.asarray(scores)
  idx, logits = jax.jit(functools.partial(topk_pallas.product_key_topk, config=THRESHOLD),
                        static_argnums=1)(scores, k)
  assert_matches_brute_force(idx, logits, scores, k)


@pytest.mark.parametrize("block_rows", [1, 2])
def test_threshold_halves_rank_bf16_scores_by_keys_that_carry_their_ids(block_rows):
  """bf16 scores cast to float32 (the layer's) leave every key's low bits free, so the
  halves' ranking puts each id there and counts by key alone. Rows 0 and 2: two equal
  first-half scores (ids 7 and 40) just below a third, so that the pair of id 7 with the
  second half's rank 10 is the 32nd best and the pruned grid holds it only if id 7
  ranks before id 40. With two rows a program, row 3's float32 scores turn the ids in the
  keys off for rows 2 and 3 (ranked by key, then by (key, id))."""
  rng = np.random.default_rng(block_rows)
  scores = np.round(rng.standard_normal((4, 2 * 64)) * 4) / 4
  for row in (0, 2):
    scores[row, :64] = -10.0
    scores[row, [20, 7, 40]] = [2.125, 2.0, 2.0]
    scores[row, 64:] = 8 - 0.3125 * np.arange(64)
  scores = jnp.asarray(scores, jnp.bfloat16).astype(jnp.float32)
  scores = scores.at[3].set(jnp.asarray(rng.standard_normal(2 * 64), jnp.float32))
  config = THRESHOLD._replace(block_rows=block_rows)
  idx, logits = jax.jit(functools.partial(topk_pallas.product_key_topk, k=32,
                                          config=config))(scores)
  assert_matches_brute_force(idx, logits, scores, 32)
  assert 7 * 64 + 10 in np.asarray(idx)[0]


@pytest.mark.parametrize("k", [2, 3])
def test_threshold_halves_keep_ids_out_of_keys_whose_low_bits_are_set(k):
  """Float32 scores whose keys' low bits are all zeros or all ones: 1.0 and the float32 just
  127 ulps above it differ only in the 7 bits that would carry their ids at S = 128. The
  ids must stay out of those keys, or the lower id ranks first and the pruned grid loses
  the larger score's second pair (an early form took all-ones bits for free too). The rest
  are bf16 values, to keep every other key's low bits zero."""
  sub_keys = 128
  rng = np.random.default_rng(k)
  scores = -2.0 - np.round(rng.random(2 * sub_keys) * 8) / 4
  scores[0] = 1.0
  scores[1] = np.uint32(0x3F80007F).view(np.float32)  # 1.0 + 127 ulps
  scores[[sub_keys, sub_keys + 1]] = 1.0
  scores = jnp.asarray(scores[None], jnp.float32)
  idx, logits = jax.jit(functools.partial(topk_pallas.product_key_topk, k=k,
                                          config=THRESHOLD._replace(block_rows=1)))(scores)
  assert_matches_brute_force(idx, logits, scores, k)
  assert sub_keys + 1 in np.asarray(idx)[0]


def test_threshold_cuts_choose_the_k_best_whether_or_not_the_counts_stop_early():
  """`_thresholds` (plain jnp, outside a kernel), its rows as one program's: random rows
  alone, whose counts stop before the last bit with a cut below the k-th key; then beside
  rows whose k-th key equals the next (every bit counted, then the ids), where the random
  rows go on counting. Each row's cut chooses exactly its k best by (key, lowest id)."""
  k, width = 8, 32
  rng = np.random.default_rng(59)
  values = rng.standard_normal((6, width)).astype(np.float32)
  values[1] = rng.integers(-2, 3, width) * 0.5   # few distinct values: ties at the cut
  values[2, : k + 4] = 1.5                       # k + 4 entries share the largest value

  def cuts(values):
    keys = topk_pallas.ordered_key(jnp.asarray(values))
    ids = jnp.broadcast_to(jnp.arange(width, dtype=jnp.int32), keys.shape)
    (key_cut, id_cut), = topk_pallas._thresholds(
        (topk_pallas._Entries((keys,), (ids,), id_bits=5),), k)
    keys, key_cut, id_cut = np.asarray(keys), np.asarray(key_cut)[:, 0], np.asarray(id_cut)
    chosen = (keys > key_cut[:, None]) | ((keys == key_cut[:, None])
                                          & (np.arange(width) <= id_cut))
    for row in range(len(values)):
      best = sorted(range(width), key=lambda i: (-keys[row, i], i))[:k]
      assert set(np.flatnonzero(chosen[row])) == set(best), row
    return key_cut, id_cut[:, 0], np.sort(keys, axis=1)[:, -k]

  key_cut, _, kth = cuts(values[3:])
  assert (key_cut < kth).any()
  key_cut, id_cut, kth = cuts(values)
  assert (key_cut == kth).all()
  assert (id_cut[1:3] != np.iinfo(np.int32).max).all()


def test_sum_residual_is_what_rounding_dropped():
  """Against float64, which holds two float32 scores' sum exactly when their exponents
  differ by less than 29: residual = a + b - fl32(a + b); for infinite sums the finite
  score, the sum where both are infinite, 0 for an overflow; never -0.0."""
  rng = np.random.default_rng(1)
  a = (rng.standard_normal(4000) * 10.0 ** rng.integers(-6, 6, 4000)).astype(np.float32)
  b = (rng.standard_normal(4000) * 10.0 ** rng.integers(-6, 6, 4000)).astype(np.float32)
  a[:10], b[:10] = [np.inf, -np.inf, 3e38, 1.0, -0.0, 0.0, 1e4, 2.5, 1e-45, 7.0], \
      [1.0, 2.0, 3e38, -1.0, -0.0, -0.0, 1e-6, -2.5, 1e-45, np.inf]
  sums = a + b
  got = np.asarray(topk_xla.sum_residual(jnp.asarray(a), jnp.asarray(b), jnp.asarray(sums)))
  with np.errstate(invalid="ignore", over="ignore"):
    want = (a.astype(np.float64) + b.astype(np.float64)) - sums.astype(np.float64)
  finite = np.isfinite(sums)
  held = finite & (np.abs(np.frexp(a)[1] - np.frexp(b)[1]) < 29)
  assert held.sum() > 3000
  np.testing.assert_array_equal(got[held], want[held].astype(np.float32))
  np.testing.assert_array_equal(got[:3], [1.0, 2.0, 0.0])  # inf + 1, -inf + 2, overflow
  assert got[9] == 7.0 and not np.signbit(got[got == 0]).any()
  np.testing.assert_array_equal(
      topk_xla.sum_residual(jnp.float32(-np.inf), jnp.float32(-np.inf), jnp.float32(-np.inf)),
      -np.inf)
  assert (got != 0).sum() > 1000  # most of these sums were rounded


def test_sums_exact_never_holds_where_a_sum_rounds():
  """`_sums_exact` against float64 pair sums of sets of float32 values (normal, on bf16's
  grid over a few or many binades, subnormal, integers times powers of two with zeros,
  powers of two, an infinity): where it holds, every pair's sum is exact; it holds on
  every bf16-grid set of normal scores (the frontier then skips its residuals) and on
  none with an infinity."""
  rng = np.random.default_rng(3)
  to_bf16_grid = lambda x: np.asarray(jnp.asarray(x, jnp.float32).astype(jnp.bfloat16)
                                      .astype(jnp.float32))
  makers = {
      "normal": lambda n: rng.standard_normal(n),
      "bf16": lambda n: to_bf16_grid(rng.standard_normal(n) * 10.0 ** rng.integers(-5, 5)),
      "bf16_wide": lambda n: to_bf16_grid(rng.standard_normal(n) * np.exp(rng.uniform(-20, 20, n))),
      "subnormal": lambda n: rng.integers(-1000, 1000, n) * 2.0 ** rng.integers(-150, -120),
      "integers": lambda n: np.where(rng.random(n) < 0.3, -0.0,
                                     rng.integers(-4096, 4096, n) * 2.0 ** rng.integers(-20, 20)),
      "powers": lambda n: 2.0 ** rng.integers(-140, 120, n) * rng.choice([-1, 1], n),
  }
  sums_exact = jax.jit(topk_pallas._sums_exact)
  held = {name: 0 for name in makers}
  for trial in range(240):
    name = list(makers)[trial % len(makers)]
    values = makers[name](int(rng.integers(2, 40))).astype(np.float32)
    infinite = trial % 24 == 0
    if infinite:
      values[0] = np.inf
    first, second = values[:len(values) // 2], values[len(values) // 2:]
    got = bool(sums_exact(jnp.asarray(first), jnp.asarray(second)))
    with np.errstate(invalid="ignore"):
      pairs = values[:, None].astype(np.float64) + values[None, :]
      exact = np.isfinite(values).all() and (
          (values[:, None] + values[None, :]).astype(np.float64) == pairs).all()
    assert exact or not got, (name, values)
    assert not (got and infinite)
    held[name] += got
  assert held["bf16"] == 40 and held["integers"] > 30 and held["normal"] < 10


def test_ordered_key_orders_like_the_floats():
  """Negative and positive normals, subnormals, both zeros, infinities, bf16-rounded
  duplicates: key(x) < key(y) exactly when x < y, and -0.0 and +0.0 share a key."""
  rng = np.random.default_rng(0)
  values = np.concatenate([
      rng.standard_normal(150) * 10.0 ** rng.integers(-30, 30, 150),
      np.asarray(jnp.asarray(rng.standard_normal(40), jnp.bfloat16).astype(jnp.float32)),
      [0.0, -0.0, np.inf, -np.inf, 1e-45, -1e-45, 3e38, -3e38, 1.0, -1.0]]).astype(np.float32)
  values = np.concatenate([values, values[:20]])  # exact duplicates too
  keys = np.asarray(topk_pallas.ordered_key(jnp.asarray(values)))
  assert keys.dtype == np.int32
  def order(x):  # -1, 0, 1: x[i] below, equal to, above x[j]
    return (x[:, None] > x[None, :]).astype(int) - (x[:, None] < x[None, :])

  np.testing.assert_array_equal(order(keys), order(values))
  assert keys[values == 0].min() == keys[values == 0].max() == 0


@pytest.mark.parametrize("config,sub_keys,k",
                         [(config, 512, 32) for config in (topk_pallas.KernelConfig(), *CONFIGS)]
                         + [(topk_pallas.default_config(1024, 64), 1024, 64)], ids=str)
def test_gpu_kernel_lowers_for_gpu(config, sub_keys, k):
  """The Pallas-to-Triton lowering of every kind of config, forward and backward, on a CPU
  (65,536 rows, the benchmark's): Triton's own compiler runs only on a GPU. (Every config at
  S = 512, k = 32; the default's tiling at S = 1,024, k = 64 too.)"""
  scores = jax.ShapeDtypeStruct((65536, 2 * sub_keys), jnp.bfloat16)

  def loss(scores):
    idx, logits = topk_pallas.product_key_topk(scores, k, config=config, interpret=False)
    return jnp.sum(logits.astype(jnp.float32)) + jnp.sum(idx)

  lowered = jax.jit(jax.value_and_grad(loss)).trace(scores).lower(lowering_platforms=("cuda",))
  assert lowered.as_text().count("__gpu$xla.gpu.triton") == 1


def test_the_frontier_takes_the_scores_alone():
  """The frontier forms its candidates from the pick logs, so its launch takes no ranks
  operand, whose constant XLA built by a kernel of its own before every call (session 74);
  the tournament's takes its candidates' ranks."""
  scores = jax.ShapeDtypeStruct((64, 2 * 32), jnp.float32)

  def operands(config):
    def topk(scores):
      return topk_pallas.product_key_topk(scores, 8, config=config, interpret=False)
    text = jax.jit(topk).trace(scores).lower(lowering_platforms=("cuda",)).as_text()
    (call,) = [line for line in text.splitlines() if "__gpu$xla.gpu.triton" in line]
    return call.split("custom_call @__gpu$xla.gpu.triton(")[1].split(")")[0].count("%")

  assert operands(topk_pallas.KernelConfig()) == 1
  assert operands(topk_pallas.KernelConfig(final_select="tournament")) == 2


@pytest.mark.parametrize("field,value", [("block_rows", 3), ("num_warps", 0),
                                         ("num_warps", 64), ("group_size", 24),
                                         ("half_select", "sort"), ("pick", "argmin"),
                                         ("final_select", "sort")])
def test_kernel_config_is_checked(field, value):
  with pytest.raises(ValueError, match=f"KernelConfig.{field}"):
    topk_pallas.product_key_topk(jnp.ones((2, 8)), 2,
                                 config=topk_pallas.KernelConfig()._replace(**{field: value}))


def test_lazy_tails_rank_half_of_k_in_the_groups_tournament_only():
  """Ranks i >= k // 2 pair only with the other half's rank 0: the groups with the frontier
  (the default) or the tournament rank the first k // 2 of min(k, S) per half, every other
  selection all."""
  ranked = topk_pallas.ranked_per_half
  config = topk_pallas.KernelConfig()
  assert config.lazy_tail and config.half_select == "groups"
  assert [ranked(k, min(k, s), config) for s, k in [(512, 32), (512, 64), (6, 11), (4, 16),
                                                     (32, 1)]] == [16, 32, 5, 4, 1]
  assert ranked(64, 64, config._replace(final_select="tournament")) == 32
  for other in (config._replace(lazy_tail=False), config._replace(half_select="scan"),
                config._replace(final_select="threshold"), THRESHOLD):
    assert ranked(32, 32, other) == 32


def test_default_config_thresholds_halves_of_at_most_four_k():
  per_k = topk_pallas.THRESHOLD_MAX_SUB_KEYS_PER_K
  for sub_keys, k in [(128, 64), (256, 64), (512, 128), (4, 1)]:
    assert sub_keys <= per_k * k
    config = topk_pallas.default_config(sub_keys, k)
    assert (config.half_select, config.final_select) == ("threshold", "threshold")
  for sub_keys, k in [(512, 32), (256, 32)]:
    assert topk_pallas.default_config(sub_keys, k) == topk_pallas.KernelConfig()
  # The group bests on the float scores from S = 1,024 on.
  floats = topk_pallas.KernelConfig(float_group_bests=True)
  assert topk_pallas.FLOAT_GROUP_BESTS_MIN_SUB_KEYS == 1024
  assert topk_pallas.default_config(1024, 16) == floats
  # Two rows per program from k = 64 and S = 1,024 on (the groups); four at S = 512.
  for sub_keys, k in [(1024, 64), (2048, 128)]:
    assert topk_pallas.default_config(sub_keys, k) == floats._replace(block_rows=2)
  assert topk_pallas.default_config(512, 64) == topk_pallas.KernelConfig()


def test_default_config_thresholds_few_rows_whatever_s_and_k():
  threshold = topk_pallas.KernelConfig(half_select="threshold", final_select="threshold",
                                       block_rows=1)
  few = topk_pallas.FEW_ROWS_MAX
  for sub_keys, k in [(512, 32), (512, 64), (1024, 64), (128, 64)]:
    assert topk_pallas.default_config(sub_keys, k, rows=8) == threshold
    assert topk_pallas.default_config(sub_keys, k, rows=few) == threshold
    assert (topk_pallas.default_config(sub_keys, k, rows=few + 1)
            == topk_pallas.default_config(sub_keys, k))


def test_the_default_for_few_rows_matches_the_twin():
  """config=None on 3 rows of S = 64 (8k, where many rows take the groups) runs the
  threshold selections and returns the twin's ids and logits."""
  scores = jax.random.normal(jax.random.PRNGKey(5), (3, 128), jnp.float32)
  idx, logits = jax.jit(functools.partial(topk_pallas.product_key_topk, k=8))(scores)
  want_idx, want_logits = topk_xla.product_key_topk(scores, 8)
  np.testing.assert_array_equal(np.asarray(idx), np.asarray(want_idx))
  np.testing.assert_array_equal(np.asarray(logits), np.asarray(want_logits))


def test_candidate_pairs_are_the_hyperbola_under_k():
  assert len(topk_xla.candidate_pairs(32, 32)) == 119
  assert len(topk_xla.candidate_pairs(64, 64)) == 280
  assert len(topk_xla.candidate_pairs(16, 4)) == 16  # k = S^2: every pair
  # The GPU kernel's power-of-two blocks of candidates: at least 32 lanes each.
  assert topk_pallas.candidate_parts(119) == (128,)
  assert topk_pallas.candidate_parts(280) == (256, 32)
  assert topk_pallas.candidate_parts(645) == (512, 128, 32)
  assert topk_pallas.candidate_parts(12) == (16,)


@pytest.mark.parametrize("k,last_reads_expected", [(32, 2), (64, 3)])
def test_the_kernel_hints_which_lines_it_reads_again(k, last_reads_expected):
  """Lowered for CUDA at S = 512 (module docstring, "Cache hints"): the start tiles
  `evict_last`, and the frontier's pick-log loads (the second half's ranks, then a
  second-half pick a round); the loads that form the logits `evict_first`: both scores,
  and at k = 64 (4 rows of 64 picks, 8 a thread: `_picks_in_registers` is False) the
  ids the rounds stored before them."""
  from experiments import kernel_programs, triton_ir  # pylint: disable=import-outside-toplevel
  config = topk_pallas.default_config(512, k)
  assert topk_pallas._picks_in_registers(k, config) == (k == 32)  # pylint: disable=protected-access
  (kernel,) = triton_ir.lowered_modules(kernel_programs.topk_program(
      rows=8, sub_keys=512, k=k, config=config))
  loads = [line for line in kernel.ir.splitlines() if "tt.load" in line]
  tiles = [line for line in loads if "tensor<4x32x16x!tt.ptr<f32>>" in line]
  assert len(tiles) == 2 and all("evict_last" in line for line in tiles)
  lanes = k // 2  # the ranked ranks (lazy tails)
  kept_logs = {shape for shape in (f"4x{lanes}", "4x1") for line in loads
               if f"evict_last : tensor<{shape}x!tt.ptr<i32>>" in line}
  assert kept_logs == {f"4x{lanes}", "4x1"}
  last_reads = [line for line in loads if "evict_first" in line]
  assert len(last_reads) == last_reads_expected
  assert all(f"tensor<4x{k}x" in line for line in last_reads)


@pytest.mark.tpu
@pytest.mark.parametrize("sub_keys,k", [(512, 32), (1024, 64), (100, 128)])
def test_compiled_tpu_kernel_matches_brute_force(sub_keys, k):
  """On a TPU (never run: none was available)."""
  scores = random_scores(8, sub_keys, jnp.float32, rows=256)
  idx, logits = jax.jit(functools.partial(topk_pallas_tpu.product_key_topk, interpret=False),
                        static_argnums=1)(scores, k)
  assert_matches_brute_force(idx, logits, scores, k)


@pytest.mark.gpu
@pytest.mark.parametrize("config", GPU_CONFIGS, ids=config_id)
@pytest.mark.parametrize("sub_keys,k", [(512, 32), (1024, 64), (128, 64)])
def test_compiled_kernel_configs_match_brute_force(config, sub_keys, k):
  """On the GPU: each kind of config compiled (259 rows: not a multiple of block_rows)."""
  scores = random_scores(9, sub_keys, jnp.float32, rows=259)
  idx, logits = jax.jit(functools.partial(topk_pallas.product_key_topk, config=config),
                        static_argnums=1)(scores, k)
  assert_matches_brute_force(idx, logits, scores, k)


@pytest.mark.gpu
@pytest.mark.parametrize("impl", COMPILED_ON_GPU)
@pytest.mark.parametrize("sub_keys,k", [(512, 32), (1024, 64), (128, 64)])
def test_compiled_matches_brute_force(impl, sub_keys, k):
  """On the GPU: the compiled kernel, and the XLA path's tie rule (GPU `lax.top_k`)."""
  scores = random_scores(7, sub_keys, jnp.float32, rows=256)
  idx, logits = jax.jit(IMPLS[impl], static_argnums=1)(scores, k)
  assert_matches_brute_force(idx, logits, scores, k)
