"""`maglev_tiny_shared`: `maglev_tiny` with Q and P sharing their blocks, lambda = 0.1
(the paper's shared setting)."""

from experiments.configs import maglev_tiny


def get_config():
  config = maglev_tiny.get_config()
  config.name = "maglev_tiny_shared"
  config.model.update(sharing="shared", memory_loss_weight=0.1)
  return config
