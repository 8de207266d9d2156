"""`hybrid_attn_small`: `gdn_small` with full attention in place of its Gated DeltaNet
layers (pattern SSSA), the attention baseline of `sdm_small` and `gdn_small`."""

from experiments.configs import gdn_small


def get_config():
  config = gdn_small.get_config()
  config.name = "hybrid_attn_small"
  config.model.pattern = "SSSA"
  return config
