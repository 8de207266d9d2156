"""The recall sweep's points: each knob grows only its mixer's state; bad knobs are refused
before anything trains."""

from __future__ import annotations

import pytest

from experiments.configs import recall_sweep as sweep_config
from sdm_jax.evaluation import recall_sweep
from sdm_jax.models import describe


def test_each_knob_grows_only_its_mixers_state():
  settings = dict(sweep_config.PRESETS["smoke"], mixers=list(recall_sweep.SWEPT_MIXERS),
                  windows=[8, 16], gdn_head_dims=[8, 16],
                  sdm_slots=[64, 256])
  points = recall_sweep.sweep_points(settings)
  assert [p["name"] for p in points] == ["A", "S_window8", "S_window16", "G_K8", "G_K16",
                                         "M_N64", "M_N256"]
  state = {p["name"]: describe.decode_state_bytes(p["model"], 32)["layer_1_" + p["mixer"]]
           for p in points}
  assert state["S_window16"] == 2 * state["S_window8"]
  assert state["M_N256"] == 4 * state["M_N64"] == 256 * 32 * 4  # float32 slots of d = 32
  assert state["G_K16"] > state["G_K8"]
  for point in points:
    model = point["model"]
    assert (model.d_model, model.num_layers, model.layer_kinds) == (32, 2, "S" + point["mixer"])


def test_points_refuse_knobs_their_mixer_cannot_take():
  settings = dict(sweep_config.PRESETS["smoke"], mixers=["G"], gdn_head_dims=[12])
  with pytest.raises(ValueError, match="gdn_head_dims: 12 does not divide d_model 32"):
    recall_sweep.sweep_points(settings)
  settings = dict(sweep_config.PRESETS["smoke"], mixers=["M"], sdm_slots=[50])
  with pytest.raises(ValueError, match="sweep point M_N50: .*perfect square"):
    recall_sweep.sweep_points(settings)
  settings = dict(sweep_config.PRESETS["smoke"], mixers="SX")
  with pytest.raises(ValueError, match="mixers must be distinct letters of ASGM, got 'SX'"):
    recall_sweep.sweep_points(settings)
  settings = dict(sweep_config.PRESETS["smoke"], mixers=["S"], windows=[64])
  with pytest.raises(ValueError, match="sweep point S_window64: .*window"):
    recall_sweep.sweep_points(settings)
