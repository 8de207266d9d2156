"""`maglev_small_shared`: `maglev_small` with Q and P sharing their blocks, lambda = 0.1
(the paper's shared setting)."""

from experiments.configs import maglev_small
from experiments.configs.base import maglev_shared_variant


def get_config():
  return maglev_shared_variant("maglev_small_shared", maglev_small.get_config())
