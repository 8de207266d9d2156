"""Maglev against its baselines at equal tokens, and fixed-point against recurrent prefill.

  python -m experiments.maglev_compare --size=tiny                 # CPU minutes
  python -m experiments.maglev_compare --size=small --steps=1200   # one H200, < 10 minutes

See `experiments.maglev_comparison.compare` for what is trained, evaluated and timed.
Prints progress, a table, then one JSON line with everything.
"""

from __future__ import annotations

import json

from absl import app
from absl import flags

from experiments import common
from experiments.maglev_comparison import MODELS, compare

_SIZE = flags.DEFINE_enum("size", "tiny", ["tiny", "small"], "Config family maglev_<size>*.")
_MODELS = flags.DEFINE_list("models", list(MODELS), f"Which of {MODELS} to train.")
_STEPS = flags.DEFINE_integer("steps", None, "Training steps of every model (default: the "
                              "configs' train.steps).")
_WORKDIR_ROOT = flags.DEFINE_string("workdir_root", None, "Workdirs go to <root>/<config> "
                                    "(default: a new temporary directory).")
_DATA = flags.DEFINE_string("data", None, "Override data.path of every config.")
_MODEL_OVERRIDES = flags.DEFINE_string("model_overrides", "{}", "JSON of model fields set in "
                                       "every config (e.g. '{\"d_model\": 32}').")
_TRAIN_OVERRIDES = flags.DEFINE_string("train_overrides", "{}", "JSON of train fields set in "
                                       "every config.")
_PREFILL_BATCH = flags.DEFINE_integer("prefill_batch", 8, "Prompts per prefill timing.")
_PREFILL_LEN = flags.DEFINE_integer("prefill_len", None, "Prompt length (default: seq_len).")
_TOL = flags.DEFINE_float("tol", 1e-4, "Fixed-point tolerance on the memories.")
_REPEATS = flags.DEFINE_integer("repeats", 5, "Timed calls per prefill method.")


def main(argv):
  del argv
  common.quiet_logging()
  summary = compare(_SIZE.value, _MODELS.value, steps=_STEPS.value,
                    workdir_root=_WORKDIR_ROOT.value, data_path=_DATA.value,
                    model_overrides=json.loads(_MODEL_OVERRIDES.value),
                    train_overrides=json.loads(_TRAIN_OVERRIDES.value),
                    prefill_batch=_PREFILL_BATCH.value, prefill_len=_PREFILL_LEN.value,
                    tol=_TOL.value, repeats=_REPEATS.value)
  print(json.dumps(summary))


if __name__ == "__main__":
  app.run(main)
