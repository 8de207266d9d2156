"""The flags every equal-tokens comparison CLI shares (`experiments.compare`,
`experiments.maglev_compare`): steps, workdirs, data and overrides applied to every config.
Importing this module defines them."""

from __future__ import annotations

import json
from typing import Any

from absl import flags

_STEPS = flags.DEFINE_integer("steps", None, "Training steps of every model (default: the "
                              "configs' train.steps).")
_WORKDIR_ROOT = flags.DEFINE_string("workdir_root", None, "Workdirs go to <root>/<config> "
                                    "(default: a new temporary directory).")
_DATA = flags.DEFINE_string("data", None, "Override data.path of every config.")
_MODEL_OVERRIDES = flags.DEFINE_string("model_overrides", "{}", "JSON of model fields set in "
                                       "every config (e.g. '{\"d_model\": 32}').")
_TRAIN_OVERRIDES = flags.DEFINE_string("train_overrides", "{}", "JSON of train fields set in "
                                       "every config.")


def _json_object(flag: flags.FlagHolder) -> dict[str, Any]:
  try:
    value = json.loads(flag.value)
  except json.JSONDecodeError as error:
    raise ValueError(f"--{flag.name} must be a JSON object, got {flag.value!r}: {error}"
                     ) from None
  if not isinstance(value, dict):
    raise ValueError(f"--{flag.name} must be a JSON object, got {flag.value!r}")
  return value


def comparison_kwargs() -> dict[str, Any]:
  """steps, workdir_root, data_path, model_overrides and train_overrides from the flags,
  as `experiments.comparison.compare` takes them."""
  return {"steps": _STEPS.value, "workdir_root": _WORKDIR_ROOT.value,
          "data_path": _DATA.value, "model_overrides": _json_object(_MODEL_OVERRIDES),
          "train_overrides": _json_object(_TRAIN_OVERRIDES)}
