"""`maglev_tiny_slsl`: the SLSL baseline (pattern SA, the prefiller's) of `maglev_tiny` at
its decoder's size, window and training."""

from experiments.configs import maglev_tiny
from experiments.configs.base import maglev_baseline


def get_config():
  return maglev_baseline("maglev_tiny_slsl", maglev_tiny.get_config(), pattern="SA")
