"""Settings of `experiments.recall_sweep` (not a model config): `get_config(preset)`.

  --config=experiments/configs/recall_sweep.py:h200    (the default)
  --config=experiments/configs/recall_sweep.py:smoke   --config.steps=5 --config.windows=8,16

Fields: mixers (letters of A, S, G, M); d_model, num_heads, base_window (the binding first
layer's window); the knobs windows (S), gdn_head_dims (G), sdm_slots (M, at sdm_writes /
sdm_reads); the MQAR task seq_len, num_kv_pairs, vocab_size; training steps, batch_size,
peak_lr, compute_dtype; scoring eval_seq_lens, eval_num_kv_pairs, eval_examples.
"""

from __future__ import annotations

from ml_collections import config_dict

PRESETS = {
    # One H200, under ten minutes: 11 models of d=128 on MQAR with 32 pairs in 256 tokens
    # (probes: with 16 pairs SA and SG K=32 reach 0.99 in 2000 steps; with 32 pairs in 512
    # tokens nothing leaves chance in 400 steps).
    "h200": dict(mixers="ASGM", d_model=128, num_heads=4, base_window=8,
                 windows=(16, 64, 256), gdn_head_dims=(16, 32, 64),
                 sdm_slots=(1024, 4096, 16384, 65536), sdm_writes=32, sdm_reads=32,
                 seq_len=256, num_kv_pairs=32, vocab_size=256, steps=3000, batch_size=64,
                 peak_lr=3e-3, compute_dtype="bfloat16", eval_seq_lens=(128, 256, 512),
                 eval_num_kv_pairs=(8, 16, 32), eval_examples=256),
    # CPU seconds per model: one knob value per mixer, a few steps (for tests).
    "smoke": dict(mixers="ASGM", d_model=32, num_heads=2, base_window=4, windows=(8,),
                  gdn_head_dims=(16,), sdm_slots=(64,), sdm_writes=4, sdm_reads=4,
                  seq_len=32, num_kv_pairs=4, vocab_size=32, steps=2, batch_size=4,
                  peak_lr=2e-3, compute_dtype="float32", eval_seq_lens=(16, 32),
                  eval_num_kv_pairs=(2, 4), eval_examples=8),
}


def get_config(preset: str = "h200") -> config_dict.ConfigDict:
  if preset not in PRESETS:
    raise ValueError(f"recall sweep preset must be one of {sorted(PRESETS)}, got {preset!r}")
  return config_dict.ConfigDict(PRESETS[preset])
