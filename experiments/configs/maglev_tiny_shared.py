"""`maglev_tiny_shared`: `maglev_tiny` with Q and P sharing their blocks, lambda = 0.1
(the paper's shared setting)."""

from experiments.configs import maglev_tiny
from experiments.configs.base import maglev_shared_variant


def get_config():
  return maglev_shared_variant("maglev_tiny_shared", maglev_tiny.get_config())
