"""The flags every equal-tokens comparison CLI shares (`experiments.compare`,
`experiments.maglev_compare`): steps, workdirs, data, and `--config.<section>.<field>=value`
overrides applied to every config, as the single-config CLIs take them. Importing this
module defines them."""

from __future__ import annotations

from typing import Sequence

from absl import flags
from ml_collections import config_dict
from ml_collections import config_flags

from experiments import cli
from experiments import common
from maglev_jax.equal_tokens import Run
from sdm_jax.training.run_data import Data

_STEPS = flags.DEFINE_integer("steps", None, "Training steps of every model (default: the "
                              "configs' train.steps).")
WORKDIR_ROOT = flags.DEFINE_string("workdir_root", None, "Workdirs go to <root>/<config> "
                                   "(default: a new temporary directory).")
_DATA = flags.DEFINE_string("data", None, "Override data.path of every config.")
# Any field may be named (each config checks its own when it is built), so the sections
# start empty and accept new attributes.
_OVERRIDES = cli.define_config(
    config_flags.DEFINE_config_dict, "config",
    config_dict.ConfigDict({"model": {}, "train": {}, "data": {}}),
    "Overrides of every config: --config.model.d_model=64, --config.train.peak_lr=1e-3, ...",
    lock_config=False, accept_new_attributes=True)


def runs_from_flags(config_names: Sequence[str]) -> tuple[dict[str, Run], Data]:
  """The named configs with the flags' steps, data and overrides applied to each, as the
  runs of `maglev_jax.equal_tokens.compare` and the data they share (`common.build_runs`)."""
  overrides = _OVERRIDES.value  # ml_collections rejects other sections, with a suggestion
  data = overrides.data.to_dict()
  if _DATA.value is not None:
    data["path"] = _DATA.value
  return common.build_runs(config_names, steps=_STEPS.value,
                           model_overrides=overrides.model.to_dict(),
                           train_overrides=overrides.train.to_dict(), data_overrides=data)
