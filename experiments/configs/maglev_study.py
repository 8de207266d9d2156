"""Settings of `experiments.maglev_study` (not a model config): `get_config(preset)`.

  --config=experiments/configs/maglev_study.py:h200_shared     (the default)
  --config=experiments/configs/maglev_study.py:h200_long --config.settings=swa,shared_l0.3

Fields: maglev_config (the Maglev experiment config every Maglev setting starts from) and
baseline_config (its decoder as an LM: the SWA baseline); settings (comma-separated names:
"swa", "<sharing>_l<lambda>[_sg][_qce<w>]", see `maglev_jax.study`); seeds; steps (None:
the configs' train.steps); data (a data path, None: the configs'); model, train (field
overrides applied to both configs, e.g. --config.train.eval_tokens=65536).

The h200_* presets are sized to fit one 10-minute command each on one H200 at the
`maglev_small_w512` scale (d 384, 6 layers, window 512, sequences of 2048, 19.7M tokens per
run; WORKSPACE.md "Maglev study" gives the estimate); run them in the order listed. The
long and seeds presets take the settings found best by flag.
"""

from __future__ import annotations

from ml_collections import config_dict

_H200 = dict(maglev_config="maglev_small_w512", baseline_config="maglev_small_w512_swa")
_TINY = dict(maglev_config="maglev_tiny", baseline_config="maglev_tiny_swa")

PRESETS = {
    # The SWA baseline first, then lambda over shared stacks (the paper's shared setting
    # is lambda = 0.1).
    "h200_shared": dict(_H200, settings="swa,shared_l0.1,shared_l0.3,shared_l1"),
    # lambda over separate stacks (the paper's setting is lambda = 1).
    "h200_separate": dict(_H200, settings="separate_l0,separate_l0.1,separate_l0.3,separate_l1"),
    # Keeping Q's targets its own: the stop-gradient on m', an auxiliary CE on Q, both.
    "h200_targets": dict(_H200, settings="separate_l1_sg,shared_l0.1_sg,separate_l1_qce0.5,"
                                         "separate_l1_sg_qce0.5"),
    # 3x the tokens: SWA here, the best settings by flag (one separate-stack setting per
    # command beside SWA; see WORKSPACE.md).
    "h200_long": dict(_H200, settings="swa", steps=3600),
    # The noise level: seeds 1 and 2 beside the seed-0 runs already recorded (skipped).
    "h200_seeds": dict(_H200, settings="swa", seeds=(0, 1, 2)),
    # CPU minutes: the tiny configs at their 300 steps (window 32, sequences of 128).
    "tiny": dict(_TINY, settings="swa,separate_l0,separate_l0.3,separate_l1,shared_l0.1,"
                                 "separate_l1_sg,separate_l1_qce0.5"),
    # CPU seconds (tests): a toy model, two steps, one setting of each kind.
    "smoke": dict(_TINY, settings="swa,separate_l1,shared_l0.1_sg_qce0.5", steps=2,
                  model=dict(d_model=32, num_layers=2, num_heads=2, window=8, max_seq_len=32),
                  train=dict(seq_len=32, batch_size=4, log_every=1, eval_batch_size=4,
                             eval_tokens=128)),
}

FIELDS = ("maglev_config", "baseline_config", "settings", "seeds", "steps", "data", "model",
          "train")


def get_config(preset: str = "h200_shared") -> config_dict.ConfigDict:
  if preset not in PRESETS:
    raise ValueError(f"Maglev study preset must be one of {sorted(PRESETS)}, got {preset!r}")
  values = {"seeds": (0,), "steps": config_dict.placeholder(int),
            "data": config_dict.placeholder(str), "model": {}, "train": {}, **PRESETS[preset]}
  return config_dict.ConfigDict(values)
