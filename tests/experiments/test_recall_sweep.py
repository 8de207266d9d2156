"""`experiments.recall_sweep`: the CPU smoke version of the sweep (S and M, a few steps; A
and G differ only in their points, tested in tests/sdm_jax/evaluation) writes results.json
and the plots, and --replot redraws them; a study preset with
--results_file appends records holding every field, a second call skips the finished run,
and --replot redraws the plot of a results file."""

from __future__ import annotations

import json



def test_smoke_sweep_writes_results_and_plots(run_cli, tmp_path):
  output = tmp_path / "sweep"
  stdout = run_cli("recall_sweep", "--config=experiments/configs/recall_sweep.py:smoke",
                   "--config.mixers=SM", f"--output_dir={output}",
                   f"--workdir_root={tmp_path / 'runs'}")
  results = json.loads(stdout.strip().splitlines()[-1])
  assert results == json.loads((output / "results.json").read_text())
  assert [m["name"] for m in results["models"]] == ["S_window8", "M_N64"]
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


# What every record of a results file holds (issue 18's list, and the stop rule's verdict).
RECORD_FIELDS = ("name", "run_key", "mixer", "knob", "value", "task", "seq_len",
                 "num_kv_pairs", "state_bytes", "mixer_flops_per_token", "accuracy",
                 "chance", "steps", "step_cap", "stop_reason", "plateaued", "final_loss",
                 "m0_lr_multiplier", "context", "eval_num_kv_pairs", "sdm_slots",
                 "slots_written_fraction", "slots_written_per_sequence_fraction",
                 "m0_rows_trained_fraction")


def test_study_preset_appends_records_skips_finished_runs_and_replots(run_cli, tmp_path):
  results_file = tmp_path / "study.json"
  flags = ["--config=experiments/configs/recall_sweep.py:study_smoke", "--config.mixers=M",
           f"--results_file={results_file}", f"--workdir_root={tmp_path / 'runs'}"]
  outcome = json.loads(run_cli("recall_sweep", *flags).strip().splitlines()[-1])
  assert outcome["ran"] == ["M_N64"] and outcome["skipped"] == []
  records = json.loads(results_file.read_text())
  assert [(r["context"], r["eval_num_kv_pairs"]) for r in records] == [(32, 4), (32, 2)]
  for record in records:
    assert not set(RECORD_FIELDS) - set(record)
    assert record["mixer"] == "M" and record["value"] == record["sdm_slots"] == 64
    assert record["state_bytes"] == 64 * 32 * 4 and 0 <= record["accuracy"] <= 1
    assert 1 <= record["steps"] <= record["step_cap"] == 4
    assert isinstance(record["plateaued"], bool) and record["final_loss"] > 0
    for field in ("slots_written_fraction", "slots_written_per_sequence_fraction",
                  "m0_rows_trained_fraction"):
      assert 0 < record[field] <= 1
  written = results_file.read_text()
  again = json.loads(run_cli("recall_sweep", *flags).strip().splitlines()[-1])
  assert again["ran"] == [] and again["skipped"] == ["M_N64"]
  assert results_file.read_text() == written
  plot = tmp_path / "study_accuracy_vs_state.png"
  plot.unlink()
  replotted = run_cli("recall_sweep", f"--replot={results_file}")
  assert "M_N64" in replotted and plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
