"""The SDM configs (`sdm_tiny`, `sdm_small` and their no-M0 variants) against their GDN and
hybrid-attention baselines."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from experiments import common
from experiments.configs import get_config
from sdm_jax.models import describe
from sdm_jax.models.isoflop import sdm_matching_gdn
from sdm_jax.training.lm_training import train_lm


def model_config(name):
  return common.lm_configs(get_config(name))[0]


def test_sdm_tiny_matches_gdn_tiny():
  sdm, gdn, attn = model_config("sdm_tiny"), model_config("gdn_tiny"), model_config(
      "hybrid_attn_tiny")
  assert (sdm.layer_kinds, gdn.layer_kinds, attn.layer_kinds) == ("SSSM", "SSSG", "SSSA")
  assert sdm.d_model == gdn.d_model == attn.d_model and sdm.num_layers == gdn.num_layers
  sdm_params, gdn_params = describe.parameter_counts(sdm), describe.parameter_counts(gdn)
  assert abs(sdm_params["non_memory"] / gdn_params["non_memory"] - 1) < 0.02
  sdm_flops = describe.flops_per_token(sdm, sdm.max_seq_len)
  gdn_flops = describe.flops_per_token(gdn, gdn.max_seq_len)
  assert abs(sdm_flops["mixer_M"] / gdn_flops["mixer_G"] - 1) < 0.05
  sdm_state = describe.decode_state_bytes(sdm, 1024)["layer_3_M"]
  gdn_state = describe.decode_state_bytes(gdn, 1024)["layer_3_G"]
  assert sdm_state >= 64 * gdn_state
  fields, _ = sdm_matching_gdn(gdn)
  assert {name: getattr(sdm, name) for name in fields} == fields  # the helper's match


@pytest.mark.slow  # an end-to-end run: about 30 s of CPU compilation, mostly the backward
def test_sdm_tiny_trains_a_few_steps(tmp_path):
  config = get_config("sdm_tiny")
  # Narrower and shorter than the real run (CPU compile time), the same layer pattern.
  config.model.update(d_model=32, num_heads=2, window=16, max_seq_len=32, sdm_slots=256,
                      sdm_writes=8, sdm_reads=8, sdm_chunk_size=16)
  model, train, _ = common.lm_configs(config)
  train = dataclasses.replace(train, batch_size=2, seq_len=32, steps=2, warmup_steps=1,
                              log_every=1, checkpoint_every=2, eval_batch_size=2,
                              eval_tokens=64)
  tokens = np.random.default_rng(0).integers(0, 256, 2000).astype(np.int32)
  summary = train_lm(model, train, tokens, tokens[:500], str(tmp_path), log=lambda _: None)
  assert summary["step"] == 2
  assert np.isfinite(summary["train_loss"]) and np.isfinite(summary["val_bpb"])


@pytest.mark.parametrize("size", ["tiny", "small"])
def test_no_m0_variant_differs_only_in_the_initial_table(size):
  sdm, no_m0 = model_config(f"sdm_{size}"), model_config(f"sdm_{size}_no_m0")
  assert sdm.sdm_learn_m0 and not no_m0.sdm_learn_m0
  assert dataclasses.replace(no_m0, sdm_learn_m0=True) == sdm
  assert describe.parameter_counts(no_m0)["memory_m0"] == 0


def test_sdm_small_is_the_isoflop_twin_of_gdn_small():
  sdm, gdn, attn = (model_config(name) for name in ("sdm_small", "gdn_small",
                                                     "hybrid_attn_small"))
  assert (sdm.layer_kinds, gdn.layer_kinds, attn.layer_kinds) == ("SSSM" * 2, "SSSG" * 2,
                                                                   "SSSA" * 2)
  assert (sdm.d_model, sdm.max_seq_len, sdm.sdm_heads, sdm.sdm_slots, sdm.sdm_writes,
          sdm.sdm_reads) == (512, 2048, 1, 128 * 128, 64, 64)
  fields, report = sdm_matching_gdn(gdn)
  assert {name: getattr(sdm, name) for name in fields} == fields
  assert abs(report["flops_ratio"] - 1) < 0.05 and abs(report["parameter_ratio"] - 1) < 0.02
  assert report["state_ratio"] >= 64
  for name in ("sdm_small", "gdn_small", "hybrid_attn_small"):
    assert common.lm_configs(get_config(name))[1] == common.lm_configs(get_config("gdn_small"))[1]
