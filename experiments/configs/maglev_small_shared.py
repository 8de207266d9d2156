"""`maglev_small_shared`: `maglev_small` with Q and P sharing their blocks, lambda = 0.1
(the paper's shared setting)."""

from experiments.configs import maglev_small


def get_config():
  config = maglev_small.get_config()
  config.name = "maglev_small_shared"
  config.model.update(sharing="shared", memory_loss_weight=0.1)
  return config
