"""Describes a config without training it: parameter counts, decode state, FLOPs per token.

  python -m experiments.describe --config=swa_tiny [--context_len=32768]
  python -m experiments.describe --config=maglev_tiny   # parameters of separate and shared

Prints one JSON object.
"""

from __future__ import annotations

import json

from absl import app
from absl import flags

from experiments import common
from experiments import model_kinds
from experiments.config_flag import define_config_flag

_CONFIG = define_config_flag("sdm_tiny")
_CONTEXT_LEN = flags.DEFINE_integer("context_len", None, "Context length for the decode-state "
                                    "and FLOP figures (default: the model's max_seq_len).")


def main(argv):
  del argv
  common.quiet_logging()
  model_config, _, _ = common.lm_configs(_CONFIG.value)
  describe = model_kinds.kind_named(_CONFIG.value.get("kind", "lm")).describe
  print(json.dumps({"config": _CONFIG.value.name, **describe(model_config, _CONTEXT_LEN.value)}))


if __name__ == "__main__":
  app.run(main)
