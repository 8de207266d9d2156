"""`maglev_small_w512_swa`: the SWA baseline (pattern S) of `maglev_small_w512`: its
decoder's size, window 512 and training, without memory."""

from experiments.configs import maglev_small_w512
from experiments.configs.base import maglev_baseline


def get_config():
  return maglev_baseline("maglev_small_w512_swa", maglev_small_w512.get_config(), pattern="S")
