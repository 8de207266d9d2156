"""MaglevConfig: validation and the LMConfigs of its two networks."""

from __future__ import annotations

import pytest

from maglev_jax.config import MaglevConfig
from sdm_jax.models.config import LMConfig
from tests.maglev_jax.helpers import TINY


def test_networks_are_plain_lm_configs():
  config = MaglevConfig(**TINY, prefiller_pattern="SA", prefiller_num_layers=4)
  decoder, prefiller = config.decoder_config(), config.prefiller_config()
  assert type(decoder) is LMConfig and decoder.layer_kinds == "SS"
  assert prefiller.layer_kinds == "SASA"
  assert (decoder.d_model, decoder.window) == (prefiller.d_model, prefiller.window) == (32, 4)
  assert MaglevConfig.from_dict(config.to_dict()) == config


@pytest.mark.parametrize("fields, message", [
    (dict(pattern="SA"), "only 'S'"),
    (dict(prefiller_pattern="SG"), "prefiller_pattern"),
    (dict(sharing="tied"), "sharing must be one of"),
    (dict(prefiller_num_layers=3), "multiple of len"),
    (dict(sharing="shared", prefiller_num_layers=4), "must equal num_layers"),
    (dict(memory_loss_weight=-1.0), "memory_loss_weight"),
    (dict(prefiller_ce_weight=-0.5), "prefiller_ce_weight"),
])
def test_invalid_fields_are_named(fields, message):
  with pytest.raises(ValueError, match=message):
    MaglevConfig(**{**TINY, **fields})
