"""`attn_tiny`: a 4-layer full-attention byte LM (pattern AAAA) that trains in CPU minutes."""

from experiments.configs.base import lm_config


def get_config():
  config = lm_config("attn_tiny", d_model=128, num_layers=4, pattern="AAAA", num_heads=4,
                     window=32, max_seq_len=128)
  config.train.update(batch_size=16, seq_len=128, steps=100, peak_lr=3e-3, warmup_steps=10,
                      checkpoint_every=50, eval_tokens=32_768)
  return config
