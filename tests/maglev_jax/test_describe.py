"""Maglev's size accounting: both sharing modes, inference parameters and state."""

from __future__ import annotations

from maglev_jax.config import MaglevConfig
from maglev_jax.describe import describe
from sdm_jax.models.describe import decode_state_bytes, parameter_counts
from tests.maglev_jax.helpers import TINY


def test_shared_has_fewer_parameters_and_the_same_inference_model():
  config = MaglevConfig(**TINY)
  result = describe(config, context_len=32)
  separate, shared = result["parameters"]["separate"], result["parameters"]["shared"]
  assert shared["total"] < separate["total"]
  assert separate["total"] - shared["total"] == (
      separate["prefiller_attention"] + separate["prefiller_mlp"]
      + separate["prefiller_block_norms"])
  assert shared["inference"] == separate["inference"]
  # P alone is the SWA LM of the same size plus the injection and the residual scalings.
  lm = parameter_counts(config.decoder_config())["total"]
  scales_and_final_norm = separate["decoder_norms_and_scales"]
  assert separate["inference"] == lm + separate["decoder_injection"] + 2 * config.num_layers
  assert scales_and_final_norm == config.d_model + 2 * config.num_layers


def test_inference_state_is_the_swa_ring_buffers_plus_one_memory():
  config = MaglevConfig(**TINY)
  state = describe(config, context_len=1000)["inference_state_bytes_per_sequence"]
  swa = decode_state_bytes(config.decoder_config(), 1000)["total"]
  assert state["total"] == swa + 4 * config.d_model
  assert describe(config, context_len=10_000)["inference_state_bytes_per_sequence"] == state
