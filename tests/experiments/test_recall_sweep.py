"""`experiments.recall_sweep`: the CPU smoke version of the sweep (all four mixers, a few
steps) writes results.json and the plots; bad knobs are refused before anything trains."""

from __future__ import annotations

import json

import pytest

from experiments import recall_sweeping as recall_sweep
from experiments.configs import recall_sweep as sweep_config
from sdm_jax.models import describe


def test_smoke_sweep_writes_results_and_plots(run_cli, tmp_path):
  output = tmp_path / "sweep"
  stdout = run_cli("recall_sweep", "--config=experiments/configs/recall_sweep.py:smoke",
                   f"--output_dir={output}",
                   f"--workdir_root={tmp_path / 'runs'}")
  results = json.loads(stdout.strip().splitlines()[-1])
  assert results == json.loads((output / "results.json").read_text())
  assert [m["name"] for m in results["models"]] == ["A", "S_window8", "G_K16", "M_N64"]
  assert results["plots"] == ["accuracy_vs_state.png", "accuracy_vs_context.png"]
  for name in results["plots"]:
    assert (output / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
  for model in results["models"]:
    assert model["pattern"] == "S" + model["mixer"]
    assert 0 <= model["accuracy"] <= 1 and model["state_bytes"] > 0
    assert [p["seq_len"] for p in model["by_seq_len"]] == [16, 32]
    assert [p["num_kv_pairs"] for p in model["by_num_kv_pairs"]] == [2, 4]
  m = results["models"][-1]
  assert m["state_bytes"] == 64 * 32 * 4 and m["memory_m0_parameters"] == 64 * 32
  assert "M_N64" in stdout.split("chance")[1]


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
