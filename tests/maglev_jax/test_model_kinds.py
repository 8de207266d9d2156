"""`maglev_jax.model_kinds`: a workdir's config.json picks the kind that loads it."""

from __future__ import annotations

import json

import pytest

from maglev_jax import model_kinds
from maglev_jax.config import MaglevConfig
from sdm_jax.models.config import LMConfig


@pytest.mark.parametrize("saved, config_class", [
    ({"kind": "maglev"}, MaglevConfig),
    ({}, LMConfig),  # runs written before the kind field was saved are LMs
])
def test_the_workdir_config_picks_the_kind(tmp_path, saved, config_class):
  (tmp_path / "config.json").write_text(json.dumps({"model": {}, **saved}))
  kind = model_kinds.kind_of_workdir(str(tmp_path))
  assert kind.config_class is config_class


def test_unknown_kinds_and_workdirs_without_a_run_are_refused(tmp_path):
  with pytest.raises(ValueError, match="model kind must be one of \\['lm', 'maglev'\\], got 'rnn'"):
    model_kinds.kind_named("rnn")
  (tmp_path / "config.json").write_text(json.dumps({"kind": "recall"}))
  with pytest.raises(ValueError, match="got 'recall'"):
    model_kinds.kind_of_workdir(str(tmp_path))
  with pytest.raises(ValueError, match="holds no config.json"):
    model_kinds.kind_of_workdir(str(tmp_path / "empty"))
