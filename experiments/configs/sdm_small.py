"""`sdm_small`: `gdn_small` with its Gated DeltaNet layers replaced by Sparse Delta Memory
(pattern SSSM): one head, S = 128 sub-keys (N = 16,384 slots of Dv = 512), W = R = 64,
learned M0. These are the fields `sdm_jax.models.isoflop.sdm_matching_gdn(gdn_small)`
derives (equal mixer FLOPs, a 256x larger state); a test keeps the two in step."""

from experiments.configs import gdn_small


def get_config():
  config = gdn_small.get_config()
  config.name = "sdm_small"
  # Chunks of 16: this layer (B=16, T=2048) took 26.0 ms fwd+bwd and 5.12 GB on the H200
  # against 27.2 ms and 5.70 GB with 32 (WORKSPACE.md, issue 11); wider layers prefer 32.
  config.model.update(pattern="SSSM", sdm_heads=1, sdm_slots=16_384, sdm_writes=64,
                      sdm_reads=64, sdm_chunk_size=16)
  return config
