"""`experiments.recall_sweep`: the CPU smoke version of the sweep (all four mixers, a few
steps) writes results.json and the plots, and --replot redraws them."""

from __future__ import annotations

import json



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
  for name in results["plots"]:
    (output / name).unlink()
  replotted = run_cli("recall_sweep", f"--replot={output / 'results.json'}")
  assert "M_N64" in replotted and all((output / name).exists() for name in results["plots"])
