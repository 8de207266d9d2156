"""`maglev_small_swa`: the SWA baseline (pattern S) of `maglev_small`: its decoder's size,
window and training, without memory."""

from experiments.configs import maglev_small
from experiments.configs.base import maglev_baseline


def get_config():
  return maglev_baseline("maglev_small_swa", maglev_small.get_config(), pattern="S")
