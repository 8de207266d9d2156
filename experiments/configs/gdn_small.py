"""`gdn_small`: an 8-layer byte LM (d 512) of three sliding-window layers (window 256) and
one Gated DeltaNet layer, tiled (pattern SSSG), context 2048, bf16 activations.

GDN has 4 heads of key dim 64 and value dim 128 (gdn_expand_v 2), so its `sdm_small` twin
at equal mixer FLOPs is the issue's H=1, S=128, W=R=64. The three of `sdm_small`,
`gdn_small` and `hybrid_attn_small` train for equal tokens in one run of at most ten
minutes on one H200: `python -m experiments.compare --configs=hybrid_attn_small,gdn_small,
sdm_small,sdm_small_no_m0`.
"""

from experiments.configs.base import lm_config


def get_config():
  # Chunks of 64, where "auto" runs the GDN kernels: this layer's op (B=16, T=2048, H=4)
  # took 0.67 / 2.01 ms fwd / fwd+bwd on the H200 against 0.94 / 2.44 ms for the chunked path
  # at its best chunk, 128 (WORKSPACE.md, issue 16, session 15); the baseline at its best.
  config = lm_config("gdn_small", d_model=512, num_layers=8, pattern="SSSG", num_heads=8,
                     window=256, max_seq_len=2048, compute_dtype="bfloat16", gdn_heads=4,
                     gdn_head_dim=64, gdn_expand_v=2.0, gdn_chunk_size=64)
  config.train.update(batch_size=16, seq_len=2048, steps=900, peak_lr=2e-3, warmup_steps=90,
                      checkpoint_every=900, log_every=100, eval_batch_size=16,
                      eval_tokens=262_144)
  return config
