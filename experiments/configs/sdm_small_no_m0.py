"""`sdm_small_no_m0`: `sdm_small` whose memory starts every sequence from zeros (no learned
initial table M0), to measure what M0 buys."""

from experiments.configs import sdm_small


def get_config():
  config = sdm_small.get_config()
  config.name = "sdm_small_no_m0"
  config.model.sdm_learn_m0 = False
  return config
