"""`hybrid_attn_tiny`: three sliding-window layers and one full-attention layer (pattern
SSSA), the attention baseline of `sdm_tiny` (SSSM) and `gdn_tiny` (SSSG) at their width
and depth."""

from experiments.configs import gdn_tiny


def get_config():
  config = gdn_tiny.get_config()
  config.name = "hybrid_attn_tiny"
  config.model.pattern = "SSSA"
  return config
