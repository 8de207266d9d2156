"""Describes a config without training it: parameter counts, decode state, FLOPs per token.

  python -m experiments.describe --config=experiments/configs/swa_tiny.py [--context_len=32768]
  python -m experiments.describe --config=experiments/configs/maglev_tiny.py   # separate and shared

Prints one JSON object.
"""

from __future__ import annotations

from absl import flags

from experiments import cli
from experiments import common
from maglev_jax import model_kinds
from sdm_jax.training import records

_CONFIG = common.define_config_flag("sdm_tiny")
_CONTEXT_LEN = flags.DEFINE_integer("context_len", None, "Context length for the decode-state "
                                    "and FLOP figures (default: the model's max_seq_len).")


def main(argv):
  del argv
  config = common.loaded_config(_CONFIG)
  model_config, _, _ = common.lm_configs(config)
  describe = model_kinds.kind_named(config.get("kind", "lm")).describe
  print(records.dumps({"config": config.name, **describe(model_config, _CONTEXT_LEN.value)}))


if __name__ == "__main__":
  cli.run(main)
