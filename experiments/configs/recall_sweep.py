"""Settings of `experiments.recall_sweep` (not a model config): `get_config(preset)`.

  --config=experiments/configs/recall_sweep.py:h200    (the default)
  --config=experiments/configs/recall_sweep.py:smoke   --config.steps=5 --config.windows=8,16

Fields: mixers (letters of A, S, G, M); d_model, num_heads, base_window (the binding first
layer's window); the knobs windows (S), gdn_head_dims (G), sdm_slots (M, at sdm_writes /
sdm_reads); the task seq_len, num_kv_pairs (mqar), vocab_size; training steps (the cap),
batch_size, peak_lr, compute_dtype; scoring eval_seq_lens, eval_num_kv_pairs,
eval_examples; and, with defaults in `sdm_jax.evaluation.recall_sweep.SETTING_DEFAULTS`:
task and task_options, sdm_match_gdn (the isoFLOP SDM twin of each GDN head dim),
m0_lr_multipliers, log_every, and the stop rule plateau_window (0: off),
plateau_min_improvement, plateau_min_steps, plateau_loss_floor, plateau_pause_fraction.

Presets of the issue-18 studies, one 10-minute H200 command each, to run with
`--results_file` (WORKSPACE.md "Running" lists the commands in order):
- mqar512_*: MQAR with 64 pairs in 512 tokens; mqar2048_*: 256 pairs in 2048 tokens;
- niah_single, niah_multi_key: needle in a haystack, trained at 1024 tokens and scored at
  1K, 2K, 4K and 8K.

How they were sized. The `h200` preset's 3000 steps of batch 64 x 256 tokens took, per
step, SA 2.4 ms, SS 2.6-2.7, SG K=16/32/64 3.8/3.2/2.8, SM N=1,024/4,096/16,384/65,536
7.2/7.5/8.0/10.0 ms, and about 29 s per model besides (compilation, scoring: (476 s -
158 s of steps) / 11 models). Assumed here: step time proportional to the tokens of a step
(batch x seq_len), except SM's part that grows with N (2.8 ms from N = 1,024 to 65,536 at
batch 64: about 0.043 ms per 1,000 slots, one table per sequence, so proportional to the
batch only); SG K=128 (not measured) at 3.8 ms, like K=16; 35 s per model besides (40 s at
2048 tokens, 45 s with scoring up to 8K tokens); the whole under about 500 s, leaving the
rest of the 600 s for JAX's start and the stop at SIGTERM. Unmeasured configurations
(W = R = 64 and 128, N = 262,144) are the guesses stated where they appear. The stop rule
ends most runs earlier than these caps.

Every study run shares its stop rule: losses logged every 100 steps, the mean of the last
five against the five before, stop below 1% relative improvement or below a loss of 0.01,
never before half the cap (MQAR's loss can rest near chance before it falls), and never
on a plateau above 0.9 of the chance loss: a model that has not left chance trains to the
cap (the first mqar512_base run on the H200, without that clause, stopped every GDN at
chance after 3000 of 6000 steps; WORKSPACE.md, issue 18).
"""

from __future__ import annotations

from ml_collections import config_dict

from sdm_jax.evaluation.recall_sweep import SETTING_DEFAULTS

# d = 128, two layers (`S` + the mixer), as the h200 sweep. At d = 128 the isoFLOP twin of
# GDN (`sdm_matching_gdn`, H = 1) has S = 64 sub-keys: N = 4,096 for K = 32 and 64 (W = R =
# K) and N = 3,136 for K = 128; larger N costs mixer FLOPs for the key scores (8 d S per
# token): N = 2^14, 2^16, 2^18 have 1.33x, 2.0x, 3.4x the mixer FLOPs of N = 2^12 (records
# carry mixer_flops_per_token).
_STUDY_MODEL = dict(d_model=128, num_heads=4, base_window=8, compute_dtype="bfloat16",
                    sdm_writes=32, sdm_reads=32, peak_lr=3e-3, eval_examples=256,
                    log_every=100, plateau_window=5, plateau_min_improvement=0.01,
                    plateau_loss_floor=0.01, plateau_pause_fraction=0.9)
_NO_KNOBS = dict(windows=(), gdn_head_dims=(), sdm_slots=())


def _mqar512(steps: int = 6000, **knobs) -> dict:
  """MQAR, 64 pairs in 512 tokens, vocabulary 1,024 (chance 1/512), batch 64, scored
  also at 16 and 32 pairs."""
  return {**_STUDY_MODEL, **_NO_KNOBS, **knobs, "seq_len": 512, "num_kv_pairs": 64,
          "vocab_size": 1024, "batch_size": 64, "steps": steps,
          "plateau_min_steps": steps // 2, "eval_seq_lens": (), "eval_num_kv_pairs": (16, 32)}


def _mqar2048(steps: int = 4000, **knobs) -> dict:
  """MQAR, 256 pairs in 2048 tokens, vocabulary 1,024, batch 32, scored also at 64 and
  128 pairs."""
  return {**_STUDY_MODEL, **_NO_KNOBS, **knobs, "seq_len": 2048, "num_kv_pairs": 256,
          "vocab_size": 1024, "batch_size": 32, "steps": steps,
          "plateau_min_steps": steps // 2, "eval_seq_lens": (), "eval_num_kv_pairs": (64, 128)}


def _niah(task: str, task_options: dict, steps: int = 3000) -> dict:
  """Trained at 1024 tokens (batch 32, vocabulary 256: 127 value tokens), scored at 1K,
  2K, 4K, 8K: A, S window 256, G K=32 and 128, M N=2^12 (isoFLOP with G K=32) and 2^16.
  Per step (x2 the h200 tokens): A 4.8, S 5.4, G 6.4 + 7.6, M 14.5 + 15.8 ms = 54.5 ms;
  3000 x 54.5 ms = 164 s + 6 x 45 s = 434 s."""
  return dict(_STUDY_MODEL, mixers="ASGM", windows=(256,), gdn_head_dims=(32, 128),
              sdm_slots=(4096, 65536), task=task, task_options=task_options, seq_len=1024,
              num_kv_pairs=None, vocab_size=256, batch_size=32, steps=steps,
              plateau_min_steps=steps // 2, eval_seq_lens=(1024, 2048, 4096, 8192),
              eval_num_kv_pairs=())


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
    # The study presets' machinery on CPU in seconds (for tests): G and M, the stop rule,
    # slot usage, a scored variant; `--results_file` appends records.
    "study_smoke": dict(mixers="GM", d_model=32, num_heads=2, base_window=4, windows=(),
                        gdn_head_dims=(16,), sdm_slots=(64,), sdm_writes=4, sdm_reads=4,
                        seq_len=32, num_kv_pairs=4, vocab_size=32, steps=4, batch_size=4,
                        peak_lr=2e-3, compute_dtype="float32", eval_seq_lens=(),
                        eval_num_kv_pairs=(2,), eval_examples=8, log_every=1,
                        plateau_window=1, plateau_min_steps=2, plateau_loss_floor=0.01),

    # MQAR, 64 pairs in 512 tokens (x2 the h200 tokens per step), cap 6000 steps.
    # A 5.5 ms (4.8 + the longer attention), S 5.4 x 2, G K=32/64/128 6.4/5.6/7.6:
    # 6000 x 35.9 ms = 215 s + 6 x 35 s = 425 s.
    "mqar512_base": _mqar512(mixers="ASG", windows=(64, 256), gdn_head_dims=(32, 64, 128)),
    # M N = 2^12 (the isoFLOP twin of G K=32), 2^14, 2^16: 14.4 ms of tokens + 0.13 /
    # 0.66 / 2.77 ms of table = 14.5 / 15.1 / 17.2 ms; 6000 x 46.8 ms = 281 s + 3 x 35 s
    # = 386 s.
    "mqar512_sdm": _mqar512(mixers="M", sdm_slots=(4096, 16384, 65536), gdn_head_dims=(32,),
                            sdm_match_gdn=True),
    # M N = 2^18: 14.4 + 11.2 ms = 25.6 ms; 6000 x 25.6 = 154 s + 35 s = 189 s; and the
    # isoFLOP twin of G K=64 (N = 4,096, W = R = 64; guessed at twice the W = 32 step,
    # 28.8 ms): 173 s + 35 s = 208 s; 397 s.
    "mqar512_sdm_large": _mqar512(mixers="M", sdm_slots=(262144,), gdn_head_dims=(64,),
                                  sdm_match_gdn=True),
    # M0's learning rate x10 for N = 2^14, 2^16, 2^18: 6000 x (15.1 + 17.2 + 25.6) ms =
    # 347 s + 3 x 35 s = 452 s.
    "mqar512_m0lr": _mqar512(mixers="M", sdm_slots=(16384, 65536, 262144),
                             m0_lr_multipliers=(10.0,)),
    # The isoFLOP twin of G K=128 (N = 3,136, W = R = 128; guessed at four times the
    # W = 32 step, 57.6 ms): 6000 x 57.6 ms = 346 s + 35 s = 381 s.
    "mqar512_isoflop128": _mqar512(mixers="M", gdn_head_dims=(128,), sdm_match_gdn=True),

    # MQAR, 256 pairs in 2048 tokens, batch 32 (x4 the h200 tokens per step), cap 4000.
    # A 9.6 ms (+ attention over 2048 keys, < 1 ms at d = 128), S 10.4, G K=32/64/128
    # 12.8/11.2/15.2: 4000 x 59.2 ms = 237 s + 5 x 40 s = 437 s.
    "mqar2048_base": _mqar2048(mixers="ASG", windows=(256,), gdn_head_dims=(32, 64, 128)),
    # M N = 2^12 (the isoFLOP twin of G K=32), 2^14, 2^16: 28.8 ms of tokens + half the
    # batch-64 table part: 28.9 / 29.1 / 30.2 ms; 4000 x 88.2 ms = 353 s + 3 x 40 s =
    # 473 s.
    "mqar2048_sdm": _mqar2048(mixers="M", sdm_slots=(4096, 16384, 65536),
                              gdn_head_dims=(32,), sdm_match_gdn=True),
    # M N = 2^18 with M0's learning rate x1 and x10: 2 x 4000 x 34.4 ms = 275 s + 80 s =
    # 355 s.
    "mqar2048_sdm_large": _mqar2048(mixers="M", sdm_slots=(262144,),
                                    m0_lr_multipliers=(1.0, 10.0)),

    # Needle in a haystack (RULER-style, random filler): one needle, one query.
    "niah_single": _niah("single", dict(filler="random")),
    # Four needles with distinct keys, one queried.
    "niah_multi_key": _niah("multi_key", dict(num_keys=4, filler="random")),
    # The needle presets' machinery on CPU in seconds (for tests).
    "niah_smoke": dict(mixers="GM", d_model=32, num_heads=2, base_window=4, windows=(),
                       gdn_head_dims=(16,), sdm_slots=(64,), sdm_writes=4, sdm_reads=4,
                       task="multi_key", task_options=dict(num_keys=2, filler="random"),
                       seq_len=16, num_kv_pairs=None, vocab_size=32, steps=2, batch_size=4,
                       peak_lr=2e-3, compute_dtype="float32", eval_seq_lens=(16, 32, 64),
                       eval_num_kv_pairs=(), eval_examples=8),
}


def get_config(preset: str = "h200") -> config_dict.ConfigDict:
  if preset not in PRESETS:
    raise ValueError(f"recall sweep preset must be one of {sorted(PRESETS)}, got {preset!r}")
  settings = {**SETTING_DEFAULTS, **PRESETS[preset]}
  # None fields as typed placeholders, so --config.<field>= can still set them.
  for name, kind in (("log_every", int), ("num_kv_pairs", int)):
    if settings[name] is None:
      settings[name] = config_dict.placeholder(kind)
  return config_dict.ConfigDict(settings)
