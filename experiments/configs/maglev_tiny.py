"""`maglev_tiny`: Maglev with a 4-layer SSSS decoder P (d 64, window 32) and an SLSL
prefiller Q, separate stacks, lambda = 1; trains in CPU minutes. Variants:
`maglev_tiny_shared`, and the baselines `maglev_tiny_swa`, `maglev_tiny_slsl`."""

from experiments.configs.base import maglev_config


def get_config():
  config = maglev_config("maglev_tiny", d_model=64, num_layers=4, num_heads=4, window=32,
                         max_seq_len=128, prefiller_pattern="SA", sharing="separate",
                         memory_loss_weight=1.0)
  config.train.update(batch_size=16, seq_len=128, steps=300, peak_lr=3e-3, warmup_steps=20,
                      checkpoint_every=300, log_every=50, eval_batch_size=16,
                      eval_tokens=16_384)
  return config
