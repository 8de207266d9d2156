"""`maglev_small_slsl`: the SLSL baseline (pattern SA, the prefiller's) of `maglev_small` at
its decoder's size, window and training."""

from experiments.configs import maglev_small
from experiments.configs.base import maglev_baseline


def get_config():
  return maglev_baseline("maglev_small_slsl", maglev_small.get_config(), pattern="SA")
