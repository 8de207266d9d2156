"""The pattern-string LM: config validation, cached decoding, generation, accounting."""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sdm_jax.models.config import LMConfig
from sdm_jax.models.describe import decode_state_bytes, describe, parameter_counts
from sdm_jax.models.generate import generate
from sdm_jax.models.lm import LM, logits_and_penalty

TINY = dict(vocab_size=50, d_model=32, num_heads=2, max_seq_len=64)


def init(config, length=8, seed=0, batch=2):
  model = LM(config)
  tokens = jax.random.randint(jax.random.PRNGKey(seed), (batch, length), 0, config.vocab_size)
  # Jitted: op by op, init compiles each of its ops for every new config and shape.
  return model, jax.jit(model.init)(jax.random.PRNGKey(seed + 1), tokens), tokens


# The reference path compiles fast; the chunked one is checked against decoding in the layer test.
SMALL_SDM = dict(sdm_slots=64, sdm_writes=4, sdm_reads=4, sdm_chunk_size=8, sdm_impl="reference")


# SAG covers A and S under the default decode path; SA the decode-attention kernel (the
# fused step: norm, rotary, cache write and attention in one launch, then the splits'
# combine); batch 1 every mixer's projections (G's convolution tails too), the MLPs and the
# head on padded rows (sdm_jax/layers/decode_rows.py).
@pytest.mark.parametrize("pattern,attention_decode_impl,batch", [
    ("SAG", "auto", 2), ("SM", "auto", 2), ("SA", "pallas", 2), ("SM", "auto", 1),
    ("SAG", "auto", 1), ("SA", "pallas", 1)])
def test_cached_decode_equals_parallel_forward(pattern, attention_decode_impl, batch):
  # window 4 with 19 tokens: the S ring buffer wraps around several times.
  config = LMConfig(**TINY, pattern=pattern, num_layers=max(2, len(pattern)),
                    window=4, gdn_chunk_size=8, attention_decode_impl=attention_decode_impl,
                    **SMALL_SDM)
  model, params, tokens = init(config, length=19, batch=batch)
  full = jax.jit(model.apply)(params, tokens)  # jitted: eager dispatch compiles op by op
  prompt_len = 3
  logits, caches = jax.jit(lambda p, t: model.apply(p, t, 32, method=LM.prefill))(
      params, tokens[:, :prompt_len])
  np.testing.assert_allclose(logits, full[:, :prompt_len], rtol=1e-5, atol=1e-5)
  decode = jax.jit(lambda p, tok, pos, c: model.apply(p, tok, pos, c, method=LM.decode))
  steps = []
  for t in range(prompt_len, tokens.shape[1]):
    step_logits, caches = decode(params, tokens[:, t:t + 1], jnp.full((batch, 1), t), caches)
    steps.append(step_logits)
  np.testing.assert_allclose(jnp.concatenate(steps, 1), full[:, prompt_len:], rtol=1e-5,
                             atol=1e-5)


def test_greedy_generation_equals_the_parallel_argmax():
  config = LMConfig(**TINY, pattern="SA", num_layers=2, window=4)
  model, params, tokens = init(config, length=5)
  generated = generate(model, params, tokens, steps=7, temperature=0)
  # Greedy decoding is self-consistent iff every generated token is the argmax of the
  # parallel forward pass over the prompt and the tokens generated before it.
  sequence = jnp.concatenate([tokens, generated], 1)
  logits = jax.jit(model.apply)(params, sequence[:, :-1])
  np.testing.assert_array_equal(jnp.argmax(logits[:, 4:], -1), generated)


def test_sampling_is_seeded_and_respects_top_k():
  config = LMConfig(**TINY, pattern="A", num_layers=1)
  model, params, tokens = init(config, length=3)
  a = generate(model, params, tokens, steps=6, temperature=1.0, top_k=1, seed=3)
  greedy = generate(model, params, tokens, steps=6, temperature=0)
  np.testing.assert_array_equal(a, greedy)  # top_k=1 is greedy
  b1 = generate(model, params, tokens, steps=6, temperature=2.0, seed=1)
  b2 = generate(model, params, tokens, steps=6, temperature=2.0, seed=1)
  np.testing.assert_array_equal(b1, b2)
  with pytest.raises(ValueError, match="top_k"):
    generate(model, params, tokens, steps=2, top_k=0)


def test_generation_in_segments_reports_progress_and_samples_the_same_tokens():
  config = LMConfig(**TINY, pattern="SA", num_layers=2, window=4)
  model, params, tokens = init(config, length=3)
  whole = generate(model, params, tokens, steps=7, temperature=1.5, seed=2)
  calls = []
  pieces = generate(model, params, tokens, steps=7, temperature=1.5, seed=2,
                    progress=lambda done, total: calls.append((done, total)), segment_tokens=3)
  np.testing.assert_array_equal(pieces, whole)
  assert calls == [(3, 7), (6, 7), (7, 7)]
  with pytest.raises(ValueError, match="segment_tokens must be >= 1"):
    generate(model, params, tokens, steps=2, progress=print, segment_tokens=0)


def test_bf16_compute_keeps_float32_params_and_logits():
  config = LMConfig(**TINY, pattern="SA", num_layers=2, window=4, compute_dtype="bfloat16",
                    logit_softcap=15.0)
  model, params, tokens = init(config)
  assert all(x.dtype == jnp.float32 for x in jax.tree.leaves(params))
  logits = jax.jit(model.apply)(params, tokens)
  assert logits.dtype == jnp.float32
  assert float(jnp.max(jnp.abs(logits))) <= 15.0
  assert bool(jnp.all(jnp.isfinite(logits)))


@pytest.mark.parametrize("fields, message", [
    (dict(pattern="SAX"), "unknown layer letters"),
    (dict(pattern="SA", num_layers=3), "multiple of the pattern length"),
    (dict(pattern="S", window=128, max_seq_len=64), "window"),
    (dict(pattern="A", compute_dtype="float16"), "compute_dtype"),
    (dict(pattern="A", d_model=30, num_heads=4), "divisible"),
    (dict(pattern=""), "pattern"),
    (dict(pattern="M", sdm_slots=1000), "sdm_slots must be a perfect square"),
    (dict(pattern="M", sdm_slots=16, sdm_writes=17), "sdm_writes"),
    (dict(pattern="M", sdm_error="local"), "sdm_error"),
    (dict(pattern="M", sdm_impl="triton"), "sdm_impl"),
    (dict(pattern="M", sdm_memory_dtype="float16"), "sdm_memory_dtype"),
    (dict(pattern="M", sdm_topk_impl="reference"), "sdm_topk_impl"),
    (dict(pattern="M", sdm_heads=3), "sdm_heads"),
    (dict(pattern="S", attention_decode_impl="cudnn"), "attention_decode_impl"),
    (dict(pattern="M", sdm_balance_weight=-0.1), "sdm_balance_weight must be >= 0"),
    (dict(pattern="SA", sdm_balance_weight=0.1), "pattern 'SA' has none"),
    (dict(pattern="M", sdm_tied_addressing_init="yes"), "sdm_tied_addressing_init must be"),
])
def test_invalid_configs_name_the_field(fields, message):
  values = {**TINY, "num_layers": 2, **fields}
  with pytest.raises(ValueError, match=message):
    LMConfig(**values)


def test_pattern_is_tiled_to_depth():
  assert LMConfig(**TINY, pattern="SSA", num_layers=6).layer_kinds == "SSASSA"


def test_describe_counts_and_state_sizes():
  config = LMConfig(**TINY, pattern="SA", num_layers=2, window=8)
  counts = parameter_counts(config)
  assert counts["total"] == sum(v for k, v in counts.items() if k not in ("total", "non_memory"))
  assert counts["non_memory"] == counts["total"] and counts["memory_m0"] == 0
  assert counts["mixer_S"] == counts["mixer_A"] == 4 * 32 * 32 + 2 * 16
  short, long = decode_state_bytes(config, 16), decode_state_bytes(config, 1024)
  assert short["layer_0_S"] == long["layer_0_S"]  # the window bounds S
  assert long["layer_1_A"] == 64 * short["layer_1_A"]  # A grows with the context
  summary = describe(config, 16)
  assert summary["flops_per_token"]["total"] > 0


def test_sdm_initial_table_is_counted_apart_and_its_state_is_constant():
  config = LMConfig(**TINY, pattern="SM", num_layers=2, window=8, sdm_heads=2, **SMALL_SDM)
  counts = parameter_counts(config)
  assert counts["memory_m0"] == 2 * 64 * 16  # H * N * Dv
  assert counts["non_memory"] == counts["total"] - counts["memory_m0"]
  assert counts["total"] == sum(v for k, v in counts.items() if k not in ("total", "non_memory"))
  short, long = decode_state_bytes(config, 1024), decode_state_bytes(config, 32 * 1024)
  assert short["layer_1_M"] == long["layer_1_M"] == 2 * 64 * 16 * 4  # the float32 table only
  no_m0 = parameter_counts(LMConfig(**TINY, pattern="SM", num_layers=2, window=8,
                                    sdm_heads=2, sdm_learn_m0=False, **SMALL_SDM))
  assert no_m0["memory_m0"] == 0 and no_m0["non_memory"] == counts["non_memory"]


def test_the_addressing_balance_is_a_weighted_penalty_beside_unchanged_logits():
  config = LMConfig(vocab_size=32, d_model=32, num_layers=2, pattern="MM", num_heads=2,
                    max_seq_len=32, sdm_slots=64, sdm_writes=4, sdm_reads=4,
                    sdm_balance_weight=0.1)
  model = LM(config)
  tokens = jnp.asarray(np.random.default_rng(0).integers(0, 32, (2, 32)), jnp.int32)
  variables = jax.jit(model.init)(jax.random.PRNGKey(0), tokens)
  assert set(variables) == {"params"}  # nothing sown while initialising
  logits, penalty, metrics = jax.jit(functools.partial(logits_and_penalty, model))(
      variables, tokens)
  np.testing.assert_allclose(logits, jax.jit(model.apply)(variables, tokens), rtol=1e-6)
  # The mean of the two layers' balances: near 1 for the untrained addressing.
  assert 0.9 < float(metrics["addressing_balance"]) < 2.0
  np.testing.assert_allclose(float(penalty), 0.1 * float(metrics["addressing_balance"]),
                             rtol=1e-6)
  off = LM(dataclasses.replace(config, sdm_balance_weight=0.0))
  _, penalty, metrics = jax.jit(functools.partial(logits_and_penalty, off))(variables, tokens)
  assert float(penalty) == 0.0 and metrics == {}
