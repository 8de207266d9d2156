"""`sdm_tiny_no_m0`: `sdm_tiny` whose memory starts every sequence from zeros (no learned
initial table M0), to measure what M0 buys."""

from experiments.configs import sdm_tiny


def get_config():
  config = sdm_tiny.get_config()
  config.name = "sdm_tiny_no_m0"
  config.model.sdm_learn_m0 = False
  return config
