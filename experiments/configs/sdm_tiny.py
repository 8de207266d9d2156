"""`sdm_tiny`: three sliding-window layers and one Sparse Delta Memory layer (pattern SSSM),
the paper's hybrid, matched to `gdn_tiny` (SSSG) at equal mixer FLOPs.

The SDM fields are the ones `sdm_jax.models.isoflop.sdm_matching_gdn(gdn_tiny, heads=1)`
derives: W = R = GDN's key dim (32), S = 64 sub-keys, one head with a 4096 x 128 table
(128x GDN's 4 x 32 x 32 state per sequence); a test keeps the two in step.
"""

from experiments.configs import gdn_tiny


def get_config():
  config = gdn_tiny.get_config()
  config.name = "sdm_tiny"
  config.model.update(pattern="SSSM", sdm_heads=1, sdm_slots=4096, sdm_writes=32,
                      sdm_reads=32)
  return config
