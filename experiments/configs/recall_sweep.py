"""Settings of `experiments.recall_sweep` (not a model config): `get_config(preset)`.

  --config=experiments/configs/recall_sweep.py:h200    (the default)
  --config=experiments/configs/recall_sweep.py:smoke   --config.steps=5 --config.windows=8,16

Fields: mixers (letters of A, S, G, M); d_model, num_heads, base_window (the binding first
layer's window); the knobs windows (S), gdn_head_dims (G), sdm_slots (M, at sdm_writes /
sdm_reads); the task seq_len, num_kv_pairs (mqar), vocab_size; training steps (the cap),
batch_size, peak_lrs (each model once per learning rate), compute_dtype; scoring
eval_seq_lens, eval_num_kv_pairs, eval_examples; and, with defaults in
`sdm_jax.evaluation.recall_sweep.SETTING_DEFAULTS`: task and task_options, sdm_match_gdn
(the isoFLOP SDM twin of each GDN head dim), m0_lr_multipliers, seeds (each model once
per training seed; default 0 only), log_every, and the stop
rule plateau_window (0: off), plateau_min_improvement, plateau_min_steps,
plateau_loss_floor, plateau_pause_fraction.

Presets of the issue-18 studies, one 10-minute H200 command each, to run with
`--results_file` (WORKSPACE.md "Running" lists the commands in order):
- mqar512_*: MQAR with 64 pairs in 512 tokens; mqar2048_*: 256 pairs in 2048 tokens;
- niah_single, niah_multi_query, niah_multi_key: needle in a haystack, trained at 1024
  tokens and scored at 1K, 2K, 4K and 8K.

How they were sized. Measured on the H200 (mqar512_base, session 12): per step of batch
64 x 512 tokens, SA 3.2 ms, SS 3.0-3.6, SG K=32/64/128 2.8-3.3, and about 25 s per run
besides (compilation, scoring): no faster than the `h200` sweep's steps at half the tokens
(SA 2.4, SG 2.8-3.8, SM N=1,024/4,096/16,384/65,536 7.2/7.5/8.0/10.0 ms at batch 64 x
256), so small models are launch-bound. Assumed for the rest (not measured): SM at the
`h200` sweep's step times plus 0.043 ms per 1,000 slots beyond 65,536, W = R = 64 / 128 at
2x / 4x the W = 32 step, 2048-token steps at about 1.5x the 512-token ones. Every study
preset trains each model at two learning rates (peak_lrs 3e-3 and 1e-3; a model's figure is
its better one, as in Zoology): at 3e-3 no GDN left chance in 6000 steps on mqar512, at 1e-3
GDN K=64 reached 0.996 (WORKSPACE.md, issue 18). Estimates below are for both rates and the
step caps; the stop rule ends most runs earlier.

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
                    sdm_writes=32, sdm_reads=32, peak_lrs=(3e-3, 1e-3), eval_examples=256,
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
  """Trained at 1024 tokens (batch 32, vocabulary 256: 127 key and 127 value tokens),
  scored at 1K, 2K, 4K, 8K: A, S window 256, G K=32 and 128, M N=2^12 (isoFLOP with G K=32)
  and 2^16. Measured on the H200 (niah_single, session 21): 14-44 s per run of 3000 steps
  with its scoring, 11 runs in about 520 s with compilation; at 4000 steps both rates take
  about 600 s, so a preset may need its command twice (a cut run resumes on the same
  machine)."""
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
                 peak_lrs=(3e-3,), compute_dtype="bfloat16", eval_seq_lens=(128, 256, 512),
                 eval_num_kv_pairs=(8, 16, 32), eval_examples=256),
    # CPU seconds per model: one knob value per mixer, a few steps (for tests).
    "smoke": dict(mixers="ASGM", d_model=32, num_heads=2, base_window=4, windows=(8,),
                  gdn_head_dims=(16,), sdm_slots=(64,), sdm_writes=4, sdm_reads=4,
                  seq_len=32, num_kv_pairs=4, vocab_size=32, steps=2, batch_size=4,
                  peak_lrs=(2e-3,), compute_dtype="float32", eval_seq_lens=(16, 32),
                  eval_num_kv_pairs=(2, 4), eval_examples=8),
    # The study presets' machinery on CPU in seconds (for tests): G and M, the stop rule,
    # slot usage, a scored variant; `--results_file` appends records.
    "study_smoke": dict(mixers="GM", d_model=32, num_heads=2, base_window=4, windows=(),
                        gdn_head_dims=(16,), sdm_slots=(64,), sdm_writes=4, sdm_reads=4,
                        seq_len=32, num_kv_pairs=4, vocab_size=32, steps=4, batch_size=4,
                        peak_lrs=(2e-3,), compute_dtype="float32", eval_seq_lens=(),
                        eval_num_kv_pairs=(2,), eval_examples=8, log_every=1,
                        plateau_window=1, plateau_min_steps=2, plateau_loss_floor=0.01),

    # MQAR, 64 pairs in 512 tokens, cap 6000 steps. Measured at 3e-3 (235 s with every
    # non-A run at the cap); the 1e-3 runs add about as much: ~470 s.
    "mqar512_base": _mqar512(mixers="ASG", windows=(64, 256), gdn_head_dims=(32, 64, 128)),
    # M N = 2^12 (the isoFLOP twin of G K=32), 2^14, 2^16: 7.5 + 8.0 + 10.0 ms; per rate
    # 6000 x 25.5 ms = 153 s + 3 x 25 s = 228 s; 456 s. Measured (session 14, segment-sum
    # kernels): 6.0 / 6.4 / 8.1 ms per step, 391 s for both rates.
    "mqar512_sdm": _mqar512(mixers="M", sdm_slots=(4096, 16384, 65536), gdn_head_dims=(32,),
                            sdm_match_gdn=True),
    # M N = 2^18 (18.5 ms) and the isoFLOP twin of G K=64 (N = 4,096, W = R = 64: 15 ms);
    # per rate 6000 x 33.5 ms = 201 s + 50 s = 251 s; 502 s. Measured (session 15): 13.1 /
    # 9.1 ms per step, three runs in 343 s (~390 s for all four).
    "mqar512_sdm_large": _mqar512(mixers="M", sdm_slots=(262144,), gdn_head_dims=(64,),
                                  sdm_match_gdn=True),
    # M0's learning rate x10 for N = 2^16, 2^18 (where the table trains slowest): per rate
    # 6000 x 28.5 ms = 171 s + 50 s = 221 s; 442 s.
    "mqar512_m0lr": _mqar512(mixers="M", sdm_slots=(65536, 262144),
                             m0_lr_multipliers=(10.0,)),
    # The isoFLOP twin of G K=128 (N = 3,136, W = R = 128: 30 ms); per rate 6000 x 30 ms
    # = 180 s + 25 s = 205 s; 410 s.
    "mqar512_isoflop128": _mqar512(mixers="M", gdn_head_dims=(128,), sdm_match_gdn=True),
    # The noise level of presets 2-3 (session 15: N = 2^18 trained, 2^14 and 2^16 did not,
    # the K = 64 twin did not where the W = 32 model of its table did): seeds 1 and 2 of
    # M N = 4,096, 2^18 and the K = 64 twin at their rate, 3e-3 (6.0 + 13.1 + 9.1 ms per
    # step, measured): per seed 6000 x 28.2 ms = 169 s + 75 s = 244 s; 488 s.
    "mqar512_seeds_sdm": _mqar512(mixers="M", sdm_slots=(4096, 262144), gdn_head_dims=(64,),
                                  sdm_match_gdn=True, peak_lrs=(3e-3,), seeds=(1, 2)),
    # The read-write overlap at initialisation is W R / N (WORKSPACE.md, "Why large tables
    # train slowly"): N = 2^18 at W = R = 128 starts with 1/16 shared slots per query, as
    # N = 2^14 does at W = R = 32, against 1/256 at W = R = 32. Seeds 0 and 1 at 3e-3; step
    # time a guess (~38 ms, between the K = 128 twin's 30 ms and more key scoring):
    # 2 x (6000 x 38 ms + 25 s) = 506 s.
    "mqar512_overlap": _mqar512(mixers="M", sdm_extra_points=((262144, 128, 128),),
                                peak_lrs=(3e-3,), seeds=(0, 1)),
    # The failed runs' write addressing collapsed (113-335 distinct slots per sequence
    # against 700+ for the runs that trained; WORKSPACE.md, session 18): N = 2^18 at 3e-3
    # with the addressing balance in the loss at weight 0.01 (`sdm_balance_weight`), seeds
    # 0-2 (seeds 1 and 2 failed without it). Per seed 6000 x ~13.5 ms + 25 s = 106 s; 318 s.
    # N = 2^14 (failed at 3e-3): --config.sdm_slots=16384 (~7 ms per step).
    "mqar512_balance": _mqar512(mixers="M", sdm_slots=(262144,), peak_lrs=(3e-3,),
                                seeds=(0, 1, 2), sdm_balance_weight=0.01),
    # The balance did not help (WORKSPACE.md, session 19): every failed SDM run sits at the
    # chance loss from the start, and 1e-3 trains none of them, so higher rates: N = 2^12
    # and 2^18 at 6e-3 and 1e-2, seed 0 (6.0 + 13.1 ms per step, measured at 3e-3): per
    # rate 6000 x 19.1 ms = 115 s + 50 s = 165 s; 330 s.
    "mqar512_high_lr": _mqar512(mixers="M", sdm_slots=(4096, 262144), peak_lrs=(6e-3, 1e-2)),
    # Neither rate trained a table (WORKSPACE.md, session 20). At initialisation a token's
    # read slots and the slots its key wrote overlap in about W R / N (0.25 at N = 2^12,
    # 0.004 at 2^18), and the addressing gets gradient only through selected slots: tie
    # the read projection's initial draw to the write projection's
    # (`sdm_tied_addressing_init`): N = 2^14, 2^16, 2^18 at 3e-3, seed 0 (7 / 9 / 13 ms per
    # step): 6000 x 29 ms + 3 x 25 s = ~250 s.
    "mqar512_tied": _mqar512(mixers="M", sdm_slots=(16384, 65536, 262144), peak_lrs=(3e-3,),
                             sdm_tied_addressing_init=True),
    # ... and its seeds 1 and 2 (whether a table trains was the seed's doing at 3e-3 without
    # the tie): 2 x 250 s = ~500 s.
    "mqar512_tied_seeds": _mqar512(mixers="M", sdm_slots=(16384, 65536, 262144),
                                   peak_lrs=(3e-3,), sdm_tied_addressing_init=True,
                                   seeds=(1, 2)),
    # ... and of G K = 32, 64 at theirs, 1e-3 (2.8-3.3 ms): per seed 2 x (6000 x 3 ms + 25 s)
    # = 86 s; 172 s.
    "mqar512_seeds_gdn": _mqar512(mixers="G", gdn_head_dims=(32, 64), peak_lrs=(1e-3,),
                                  seeds=(1, 2)),

    # MQAR, 256 pairs in 2048 tokens, batch 32, cap 4000. A, S, G about 5 ms each: per
    # rate 4000 x 25 ms = 100 s + 5 x 30 s = 250 s; 500 s.
    "mqar2048_base": _mqar2048(mixers="ASG", windows=(256,), gdn_head_dims=(32, 64, 128)),
    # M N = 2^12 (the isoFLOP twin of G K=32), 2^14, 2^16: 11 + 12 + 15 ms; per rate
    # 4000 x 38 ms = 152 s + 3 x 30 s = 242 s; 484 s.
    "mqar2048_sdm": _mqar2048(mixers="M", sdm_slots=(4096, 16384, 65536),
                              gdn_head_dims=(32,), sdm_match_gdn=True),
    # M N = 2^18 with M0's learning rate x1 and x10: per rate 2 x 4000 x 20 ms = 160 s +
    # 60 s = 220 s; 440 s.
    "mqar2048_sdm_large": _mqar2048(mixers="M", sdm_slots=(262144,),
                                    m0_lr_multipliers=(1.0, 10.0)),

    # Needle in a haystack (RULER-style, random filler): one needle, one query. Ran on the
    # H200 (session 21) and trained nothing, attention included: one target per sequence of
    # 1,024 tokens is too sparse a signal at this budget. Kept for its records; the two
    # presets after it query 64 needles per sequence instead (CPU probes, WORKSPACE.md: with
    # 127 values, 16 queries per sequence stayed at chance for 1,600 steps at batch 16; with
    # 64, G K=32 reached 0.042 and A 0.022 in 1,500 steps, chance 0.008).
    "niah_single": _niah("single", dict(filler="random")),
    # 64 needles, all queried (RULER's multi-query): each query retrieves one needle among
    # 63 others, 64 targets per sequence; 384 of the 1,024 tokens are needles and queries.
    "niah_multi_query": _niah("multi_query", dict(num_keys=64, num_queries=64,
                                                  filler="random"), steps=4000),
    # 96 needles with distinct keys, 64 of them queried (RULER's multi-key, queried 64 at a
    # time for the same signal): 32 distractor needles besides the other queried ones.
    "niah_multi_key": _niah("multi_query", dict(num_keys=96, num_queries=64,
                                                filler="random"), steps=4000),
    # The needle presets' machinery on CPU in seconds (for tests).
    "niah_smoke": dict(mixers="GM", d_model=32, num_heads=2, base_window=4, windows=(),
                       gdn_head_dims=(16,), sdm_slots=(64,), sdm_writes=4, sdm_reads=4,
                       task="multi_key", task_options=dict(num_keys=2, filler="random"),
                       seq_len=16, num_kv_pairs=None, vocab_size=32, steps=2, batch_size=4,
                       peak_lrs=(2e-3,), compute_dtype="float32", eval_seq_lens=(16, 32, 64),
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
