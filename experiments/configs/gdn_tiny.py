"""`gdn_tiny`: three sliding-window layers and one Gated DeltaNet layer (pattern SSSG),
the shape of the papers' hybrids, at the width and depth of `attn_tiny`."""

from experiments.configs import attn_tiny


def get_config():
  config = attn_tiny.get_config()
  config.name = "gdn_tiny"
  config.model.pattern = "SSSG"
  config.model.gdn_heads = 4
  config.model.gdn_head_dim = 32
  return config
