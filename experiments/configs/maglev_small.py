"""`maglev_small`: Maglev with a 6-layer SSSSSS decoder P (d 384, window 128) and an SLSL
prefiller Q, separate stacks, lambda = 1, bf16 activations; sized so that it, its shared
variant and its SWA and SLSL baselines train for equal tokens in one run of at most ten
minutes on one H200 (`experiments.maglev_compare --size=small`). Variants:
`maglev_small_shared`, and the baselines `maglev_small_swa`, `maglev_small_slsl`."""

from experiments.configs.base import maglev_config


def get_config():
  config = maglev_config("maglev_small", d_model=384, num_layers=6, num_heads=6, window=128,
                         max_seq_len=512, compute_dtype="bfloat16", prefiller_pattern="SA",
                         sharing="separate", memory_loss_weight=1.0)
  config.train.update(batch_size=32, seq_len=512, steps=1200, peak_lr=2e-3, warmup_steps=100,
                      checkpoint_every=1200, log_every=100, eval_batch_size=32,
                      eval_tokens=131_072)
  return config
