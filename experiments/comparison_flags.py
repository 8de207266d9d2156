"""The flags every equal-tokens comparison CLI shares (`experiments.compare`,
`experiments.maglev_compare`): steps, workdirs, data, and `--config.<section>.<field>=value`
overrides applied to every config, as the single-config CLIs take them. Importing this
module defines them."""

from __future__ import annotations

from typing import Any

from absl import flags
from ml_collections import config_dict
from ml_collections import config_flags

from experiments import cli

_STEPS = flags.DEFINE_integer("steps", None, "Training steps of every model (default: the "
                              "configs' train.steps).")
_WORKDIR_ROOT = flags.DEFINE_string("workdir_root", None, "Workdirs go to <root>/<config> "
                                    "(default: a new temporary directory).")
_DATA = flags.DEFINE_string("data", None, "Override data.path of every config.")
# Any field may be named (each config checks its own when it is built), so the sections
# start empty and accept new attributes.
_OVERRIDES = cli.define_config(
    config_flags.DEFINE_config_dict, "config",
    config_dict.ConfigDict({"model": {}, "train": {}, "data": {}}),
    "Overrides of every config: --config.model.d_model=64, --config.train.peak_lr=1e-3, ...",
    lock_config=False, accept_new_attributes=True)


def comparison_kwargs() -> dict[str, Any]:
  """steps, workdir_root and the model, train and data overrides from the flags, as
  `experiments.comparison.compare` takes them."""
  overrides = _OVERRIDES.value  # ml_collections rejects other sections, with a suggestion
  data = overrides.data.to_dict()
  if _DATA.value is not None:
    data["path"] = _DATA.value
  return {"steps": _STEPS.value, "workdir_root": _WORKDIR_ROOT.value,
          "model_overrides": overrides.model.to_dict(),
          "train_overrides": overrides.train.to_dict(), "data_overrides": data}
