"""`swa_tiny`: `attn_tiny` with sliding-window attention of 32 keys (pattern SSSS)."""

from experiments.configs import attn_tiny


def get_config():
  config = attn_tiny.get_config()
  config.name = "swa_tiny"
  config.model.pattern = "SSSS"
  return config
