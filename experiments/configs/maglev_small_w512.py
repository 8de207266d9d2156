"""`maglev_small_w512`: `maglev_small` (6-layer SSSSSS decoder P, d 384, SLSL prefiller Q,
separate stacks, lambda = 1, bf16) with window 512 for every attention layer and sequences
of 2048 (four windows), batch 8: the same 16,384 tokens per step and 1200 steps (19.7M
tokens) as `maglev_small`. The Maglev study (`experiments.maglev_study`, issue 18) varies
sharing and the loss on top of it; its SWA baseline is `maglev_small_w512_swa`. Validation
BPB is also reported per window-wide position bucket."""

from experiments.configs.base import maglev_config


def get_config():
  config = maglev_config("maglev_small_w512", d_model=384, num_layers=6, num_heads=6,
                         window=512, max_seq_len=2048, compute_dtype="bfloat16",
                         prefiller_pattern="SA", sharing="separate", memory_loss_weight=1.0)
  config.train.update(batch_size=8, seq_len=2048, steps=1200, peak_lr=2e-3, warmup_steps=100,
                      checkpoint_every=1200, log_every=100, eval_batch_size=32,
                      eval_tokens=131_072, eval_bucket_width=512)
  return config
