"""Trains a model on a corpus, evaluates it and prints a sample.

  python -m experiments.train                # the default config on the embedded corpus
  python -m experiments.train --config=experiments/configs/swa_tiny.py --workdir=/tmp/swa \
      --steps=200
  python -m experiments.train --config=experiments/configs/attn_tiny.py --data=my_texts/ \
      --config.train.peak_lr=1e-3
  python -m experiments.train --config=experiments/configs/maglev_tiny.py   # a Maglev model

Resumes from --workdir when it holds a checkpoint. The last stdout line is a JSON object
with `step`, `train_loss`, `val_bpb`, `tokens_per_s` (and more).
"""

from __future__ import annotations

import dataclasses
import os

from absl import flags
import jax.numpy as jnp

from experiments import cli
from experiments import common
from experiments import model_kinds
from sdm_jax.data.tokenizer import BOS_ID, decode
from sdm_jax.metrics import unigram_bits_per_byte
from sdm_jax.training import records

DEFAULT_CONFIG = "sdm_tiny"

_CONFIG = common.define_config_flag(DEFAULT_CONFIG)
_WORKDIR = flags.DEFINE_string("workdir", None, "Run directory (default: workdirs/<config>).")
_STEPS = flags.DEFINE_integer("steps", None, "Override train.steps.")
_DATA = flags.DEFINE_string("data", None, "Override data.path: a text file, a directory or a "
                            "pre-tokenised .npy/.u16.bin/.u32.bin file.")
_SAMPLE_TOKENS = flags.DEFINE_integer("sample_tokens", 200, "Tokens of the sample printed "
                                      "after training (0: none).")


def main(argv):
  del argv
  config = common.loaded_config(_CONFIG)
  common.override_steps(config, _STEPS.value)
  if _DATA.value is not None:
    config.data.path = _DATA.value
  model_config, train_config, data_config = common.lm_configs(config)
  kind = model_kinds.kind_named(config.get("kind", "lm"))
  workdir = _WORKDIR.value or common.default_workdir(config.name)
  train_tokens, val_tokens = common.load_splits(data_config, model_config.vocab_size)
  print(f"config {config.name}: pattern {model_config.layer_kinds}, d_model "
        f"{model_config.d_model}; data: {data_config.path or 'embedded stdlib corpus'} "
        f"({train_tokens.size:,} train / {val_tokens.size:,} val tokens); workdir {workdir}")
  summary = kind.train(model_config, train_config, train_tokens, val_tokens, workdir,
                       extra_config={"name": config.name, "data": dataclasses.asdict(data_config)})
  stopped_by = summary.get("stopped_by")
  if not stopped_by:
    summary["unigram_bpb"] = unigram_bits_per_byte(train_tokens, val_tokens,
                                                   model_config.vocab_size)
    records.write_summary(workdir, summary)
  if _SAMPLE_TOKENS.value > 0 and not stopped_by:
    model, params, _, _ = kind.load(workdir)
    prompt = jnp.array([[BOS_ID] + list(b"def ")], jnp.int32)
    sample = kind.generate(model, params, prompt, steps=_SAMPLE_TOKENS.value, temperature=0.8,
                           top_k=50, seed=0)
    print("sample:\n" + "def " + decode(sample[0]))
  print(f"checkpoints: {os.path.join(workdir, 'checkpoints')}; metrics: "
        f"{os.path.join(workdir, records.METRICS_FILE)}; summary: "
        f"{os.path.join(workdir, records.SUMMARY_FILE)}")
  if stopped_by:
    print(f"resume: python -m experiments.train --workdir={workdir} (same flags)")
  else:
    print(f"next: python -m experiments.evaluate --workdir={workdir}; "
          f"python -m experiments.generate --workdir={workdir} --prompt='def '")
  print(records.dumps({"config": config.name, "workdir": workdir, **summary}))
  return cli.stop_status(stopped_by)


if __name__ == "__main__":
  cli.run(main)
