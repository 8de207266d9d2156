"""`maglev_tiny_swa`: the SWA baseline (pattern S) of `maglev_tiny`: its decoder's size,
window and training, without memory."""

from experiments.configs import maglev_tiny
from experiments.configs.base import maglev_baseline


def get_config():
  return maglev_baseline("maglev_tiny_swa", maglev_tiny.get_config(), pattern="S")
