"""The recall sweep's points: each knob grows only its mixer's state, M0 multipliers and
isoFLOP twins add SDM points, each point once per learning rate; bad settings are refused
before anything trains; run keys; records per scored variant; the stop rule and the
skipping of finished runs in a results file; needle tasks scored by context."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

from experiments.configs import recall_sweep as sweep_config
from sdm_jax.evaluation import recall_plots, recall_sweep
from sdm_jax.models import describe
from sdm_jax.models.isoflop import sdm_matching_gdn


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


def test_every_preset_builds_its_points():
  """What each study command would train, checked without training: every preset's
  settings are complete and valid and give at least one point."""
  for name, preset in sweep_config.PRESETS.items():
    points = recall_sweep.sweep_points(dict(preset))
    assert points, name
  high_lr = recall_sweep.sweep_points(dict(sweep_config.PRESETS["mqar512_high_lr"]))
  assert sorted((p["name"], p["peak_lr"]) for p in high_lr) == [
      ("M_N262144", 6e-3), ("M_N262144", 1e-2), ("M_N4096", 6e-3), ("M_N4096", 1e-2)]


def test_the_presets_run_on_the_h200_keep_their_recorded_run_keys():
  """Settings and config fields added since a preset ran must leave its run keys alone,
  or rerunning it would train its recorded runs again (`_FIELDS_ADDED_LATER`)."""
  results = pathlib.Path(__file__).parents[3] / "experiments/results/recall_study_h200.json"
  recorded = {record["run_key"] for record in json.loads(results.read_text())}
  for name in ("mqar512_base", "mqar512_sdm", "mqar512_sdm_large", "mqar512_seeds_sdm",
               "mqar512_seeds_gdn", "mqar512_overlap", "mqar512_balance", "mqar512_high_lr",
               "mqar512_tied"):
    settings = recall_sweep.complete_settings(sweep_config.PRESETS[name])
    task, rule = recall_sweep.sweep_task(settings), recall_sweep.plateau_rule(settings)
    for point in recall_sweep.sweep_points(settings):
      train_config = recall_sweep.train_config_of(settings, point)
      assert recall_sweep.run_key(point, task, train_config, rule, settings) in recorded, (
          name, point["name"], point["peak_lr"], point["seed"])


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


def test_m0_multipliers_and_isoflop_twins_add_sdm_points():
  settings = dict(sweep_config.PRESETS["smoke"], mixers="GM", gdn_head_dims=[8, 16],
                  sdm_slots=[64, 256], m0_lr_multipliers=[1.0, 4.0], sdm_match_gdn=True)
  points = {p["name"]: p for p in recall_sweep.sweep_points(settings)}
  twins = {}
  for head_dim in (8, 16):
    gdn = points[f"G_K{head_dim}"]["model"]
    fields, report = sdm_matching_gdn(gdn)
    assert 0.8 < report["flops_ratio"] < 1.25
    twins[head_dim] = fields
    name = f"M_N{fields['sdm_slots']}_W{head_dim}"
    for suffix, multiplier in (("", 1.0), ("_m0lr4", 4.0)):
      twin = points[name + suffix]
      assert twin["isoflop_gdn_head_dim"] == head_dim
      assert twin["m0_lr_multiplier"] == multiplier
      model = twin["model"]
      assert (model.sdm_slots, model.sdm_writes, model.sdm_reads) == (
          fields["sdm_slots"], head_dim, head_dim)
  for slots in (64, 256):
    assert points[f"M_N{slots}"]["m0_lr_multiplier"] == 1.0
    assert points[f"M_N{slots}_m0lr4"]["model"] == points[f"M_N{slots}"]["model"]
  assert len(points) == 2 + 2 * 2 + 2 * 2
  # A twin equal to an N point is that point, marked with the GDN head dim it matches.
  settings.update(sdm_writes=16, sdm_reads=16, m0_lr_multipliers=[1.0],
                  sdm_slots=[twins[16]["sdm_slots"]])
  names = [(p["name"], p["isoflop_gdn_head_dim"]) for p in recall_sweep.sweep_points(settings)]
  assert (f"M_N{twins[16]['sdm_slots']}", 16) in names
  assert not any(name.endswith("_W16") for name, _ in names)


def test_each_point_trains_once_per_learning_rate():
  settings = recall_sweep.complete_settings(
      dict(sweep_config.PRESETS["smoke"], mixers="GM", peak_lrs=[3e-3, 1e-3]))
  points = recall_sweep.sweep_points(settings)
  assert [(p["name"], p["peak_lr"]) for p in points] == [
      ("G_K16", 3e-3), ("G_K16", 1e-3), ("M_N64", 3e-3), ("M_N64", 1e-3)]
  configs = [recall_sweep.train_config_of(settings, p) for p in points]
  assert [c.peak_lr for c in configs] == [3e-3, 1e-3, 3e-3, 1e-3]
  task = recall_sweep.sweep_task(settings)
  keys = {recall_sweep.run_key(p, task, c, None, settings) for p, c in zip(points, configs)}
  assert len(keys) == 4
  # The run key of a learning rate does not depend on the others swept beside it.
  alone = dict(settings, peak_lrs=[3e-3])
  point = recall_sweep.sweep_points(alone)[0]
  assert recall_sweep.run_key(point, task, recall_sweep.train_config_of(alone, point), None,
                              alone) in keys


def test_plots_show_each_models_best_learning_rate_and_its_median_seed():
  line = [{"state_bytes": 10, "peak_lr": 3e-3, "accuracy": 0.2},
          {"state_bytes": 10, "peak_lr": 1e-3, "accuracy": 0.9},
          {"state_bytes": 5, "peak_lr": 3e-3, "accuracy": 0.4}]
  best = recall_plots._best_per_state(line)  # pylint: disable=protected-access
  assert best == [{**line[2], "seed_accuracies": [0.4]}, {**line[1], "seed_accuracies": [0.9]}]
  # A rate's figure is the median of its seeds (0.5 here), not its luckiest seed (0.95).
  seeds = [{"state_bytes": 10, "peak_lr": 3e-3, "seed": seed, "accuracy": accuracy}
           for seed, accuracy in ((0, 0.95), (1, 0.1), (2, 0.5))]
  best = recall_plots._best_per_state(seeds + [line[1]])  # pylint: disable=protected-access
  assert best == [{**line[1], "seed_accuracies": [0.9]}]
  best = recall_plots._best_per_state(seeds)  # pylint: disable=protected-access
  assert best[0]["accuracy"] == 0.5 and best[0]["seed_accuracies"] == [0.1, 0.5, 0.95]
  even = recall_plots._best_per_state(seeds[:2])  # pylint: disable=protected-access
  assert even[0]["accuracy"] == pytest.approx(0.525)


def test_needle_records_of_other_key_counts_get_their_own_panels():
  """Two presets of one needle task (16 and 64 keys) plot apart, titled by their counts;
  records from before task_options existed share a panel with option-less ones."""
  base = {"task": "multi_query", "seq_len": 1024, "num_kv_pairs": None, "vocab_size": 256,
          "d_model": 128}
  few = dict(base, task_options={"num_keys": 16, "num_queries": 16, "filler": "random"})
  many = dict(base, task_options={"num_keys": 64, "num_queries": 16, "filler": "random"})
  keys = {recall_plots._panel_key(r) for r in (few, many)}  # pylint: disable=protected-access
  assert len(keys) == 2
  titles = sorted(recall_plots._panel_title(k) for k in keys)  # pylint: disable=protected-access
  assert titles == [f"needle task 'multi_query' (num_keys={n}, num_queries=16) in 1024 tokens, "
                    f"vocab 256, d=128" for n in (16, 64)]
  old = dict(base, task="single")  # no task_options field
  assert recall_plots._panel_key(old) == recall_plots._panel_key(  # pylint: disable=protected-access
      dict(old, task_options={}))


def test_context_plot_lines_name_rate_and_seed_where_runs_differ_and_fade_by_state():
  runs = [{"name": "A", "peak_lr": 3e-3, "seed": 0}, {"name": "A", "peak_lr": 1e-3, "seed": 0},
          {"name": "G_K32", "peak_lr": 1e-3, "seed": 0}, {"name": "G_K32", "peak_lr": 1e-3,
                                                           "seed": 1}]
  labels = [recall_plots._context_label(r, runs) for r in runs]  # pylint: disable=protected-access
  assert labels == ["A, lr 0.003", "A, lr 0.001", "G_K32, seed 0", "G_K32, seed 1"]
  assert recall_plots._context_label(runs[0], runs[:1]) == "A"  # pylint: disable=protected-access
  # Lines of one mixer fade with its smaller states; a mixer with one state is drawn full.
  sized = [{"mixer": "G", "state_bytes": b} for b in (10, 20, 20, 40)] + [
      {"mixer": "A", "state_bytes": 5}]
  ranks = [recall_plots._rank_in_mixer(r, sized) for r in sized]  # pylint: disable=protected-access
  assert ranks == [0.0, 0.5, 0.5, 1.0, 1.0]


def test_each_training_remedy_is_its_own_series_in_the_state_plot():
  """Tied, balanced and M0-rate runs are not pooled into the plain runs' median; records
  from before those fields existed are plain."""
  plain = {"mixer": "M", "sdm_writes": 32, "m0_lr_multiplier": 1.0}
  labels = [recall_plots._series(r)[0] for r in (  # pylint: disable=protected-access
      plain, dict(plain, sdm_tied_addressing_init=True), dict(plain, sdm_balance_weight=0.01),
      dict(plain, m0_lr_multiplier=10.0), dict(plain, sdm_tied_addressing_init=False,
                                               sdm_balance_weight=0.0))]
  assert labels == ["Sparse Delta Memory (SM), W=R=32" + suffix for suffix in (
      "", ", tied init", ", balance 0.01", ", M0 lr x10", "")]


def test_each_point_trains_once_per_seed_and_seed_zero_keeps_its_run_key():
  base = recall_sweep.complete_settings(dict(sweep_config.PRESETS["smoke"], mixers="G"))
  settings = dict(base, seeds=(0, 3))
  points = recall_sweep.sweep_points(settings)
  assert [(p["name"], p["seed"]) for p in points] == [("G_K16", 0), ("G_K16", 3)]
  configs = [recall_sweep.train_config_of(settings, p) for p in points]
  assert [c.seed for c in configs] == [0, 3]
  task = recall_sweep.sweep_task(settings)
  keys = [recall_sweep.run_key(p, task, c, None, settings) for p, c in zip(points, configs)]
  assert len(set(keys)) == 2
  # Records written before seeds existed (seed 0 implied) keep their keys.
  point = recall_sweep.sweep_points(base)[0]
  assert recall_sweep.run_key(point, task, recall_sweep.train_config_of(base, point), None,
                              base) == keys[0]
  for bad in ([], [1, 1], [-1], [1.5], [True]):
    with pytest.raises(ValueError, match="seeds must be distinct ints >= 0"):
      recall_sweep.sweep_points(dict(base, seeds=bad))


def test_settings_are_checked_before_anything_trains(tmp_path):
  with pytest.raises(ValueError, match=r"missing \['steps'\], unknown \['stepz'\]"):
    settings = dict(sweep_config.PRESETS["smoke"], stepz=3)
    del settings["steps"]
    recall_sweep.complete_settings(settings)
  needle = dict(sweep_config.PRESETS["niah_smoke"], num_kv_pairs=4)
  with pytest.raises(ValueError, match="num_kv_pairs is an mqar setting"):
    recall_sweep.sweep_task(recall_sweep.complete_settings(needle))
  with pytest.raises(ValueError, match="m0_lr_multipliers must be distinct"):
    recall_sweep.sweep_points(dict(sweep_config.PRESETS["smoke"], m0_lr_multipliers=[]))
  with pytest.raises(ValueError, match="TrainConfig.m0_lr_multiplier must be >= 0"):
    recall_sweep.run_sweep(dict(sweep_config.PRESETS["smoke"], m0_lr_multipliers=[-1.0]),
                           results_file=str(tmp_path / "r.json"))
  with pytest.raises(ValueError, match="PlateauRule.min_improvement"):
    recall_sweep.run_sweep(dict(sweep_config.PRESETS["smoke"], plateau_window=2,
                                plateau_min_improvement=-1.0),
                           results_file=str(tmp_path / "r.json"))
  with pytest.raises(ValueError, match="plateau_pause_fraction must be in"):
    recall_sweep.run_sweep(dict(sweep_config.PRESETS["smoke"], plateau_window=2,
                                plateau_pause_fraction=1.5),
                           results_file=str(tmp_path / "r.json"))
  for bad in ([], [1e-3, 1e-3], [-1e-3], ["fast"]):
    with pytest.raises(ValueError, match="peak_lrs must be distinct numbers >= 0"):
      recall_sweep.sweep_points(dict(sweep_config.PRESETS["smoke"], peak_lrs=bad))
  with pytest.raises(ValueError, match="several learning rates need results_file"):
    recall_sweep.run_sweep(dict(sweep_config.PRESETS["smoke"], peak_lrs=[1e-3, 3e-3]),
                           output_dir=str(tmp_path / "out"))
  with pytest.raises(ValueError, match="exactly one of output_dir"):
    recall_sweep.run_sweep(sweep_config.PRESETS["smoke"])
  assert not (tmp_path / "r.json").exists()


def test_run_keys_change_with_what_shapes_a_run():
  settings = recall_sweep.complete_settings(sweep_config.PRESETS["smoke"])

  def key_of(**changes):
    changed = {**settings, **changes}
    point = next(p for p in recall_sweep.sweep_points(changed) if p["mixer"] == "M")
    return recall_sweep.run_key(point, recall_sweep.sweep_task(changed),
                                recall_sweep.train_config_of(changed, point),
                                recall_sweep.plateau_rule(changed), changed)

  key = key_of()
  assert key.startswith("M_N64-") and key == key_of()
  # The knob lists of other mixers do not shape this run.
  assert key == key_of(windows=[16], gdn_head_dims=[8])
  others = [key_of(steps=3), key_of(seq_len=24), key_of(sdm_writes=2, sdm_reads=2),
            key_of(sdm_balance_weight=0.01), key_of(sdm_tied_addressing_init=True),
            key_of(plateau_window=2), key_of(eval_examples=4), key_of(peak_lrs=(1e-3,)),
            key_of(plateau_window=2, plateau_pause_fraction=0.9)]
  assert len({key, *others}) == 1 + len(others)


def test_the_pause_threshold_is_a_fraction_of_the_chance_loss():
  settings = recall_sweep.complete_settings(
      dict(sweep_config.PRESETS["smoke"], plateau_window=2, plateau_pause_fraction=0.9))
  chance = recall_sweep.chance_accuracy(recall_sweep.sweep_task(settings))
  assert recall_sweep.plateau_rule(settings).pause_above == pytest.approx(
      -0.9 * np.log(chance))
  assert recall_sweep.plateau_rule({**settings, "plateau_pause_fraction": 0}).pause_above == 0


def _run_record(rng):
  return {"name": "M_N64", "run_key": "M_N64-0", "mixer": "M", "seq_len": 32,
          "num_kv_pairs": 4, "accuracy": float(rng.random()), "n": 8, "positions": 32,
          "steps": 3, "by_seq_len": [{"seq_len": L, "accuracy": float(rng.random()), "n": 8,
                                      "positions": 32} for L in (16, 32)],
          "by_num_kv_pairs": [{"num_kv_pairs": P, "accuracy": float(rng.random()), "n": 8,
                               "positions": 4 * P} for P in (2, 4)]}


def test_measurement_records_are_one_per_scored_variant():
  run = _run_record(np.random.default_rng(0))
  flat = recall_sweep.measurement_records(run)
  assert [(r["context"], r["eval_num_kv_pairs"]) for r in flat] == [(32, 4), (16, 4), (32, 2)]
  assert [r["accuracy"] for r in flat] == [run["accuracy"], run["by_seq_len"][0]["accuracy"],
                                           run["by_num_kv_pairs"][0]["accuracy"]]
  assert flat[2]["positions"] == 8
  for record in flat:
    assert "by_seq_len" not in record and "by_num_kv_pairs" not in record
    assert (record["name"], record["steps"], record["seq_len"]) == ("M_N64", 3, 32)


def test_a_flat_run_stops_at_the_plateau_and_a_rerun_skips_it(tmp_path):
  # No learning (peak_lr 0): the loss moves only with the batches, far from halving.
  settings = dict(sweep_config.PRESETS["study_smoke"], mixers="G", peak_lrs=(0.0,), steps=12,
                  log_every=1, plateau_window=2, plateau_min_improvement=0.5,
                  plateau_min_steps=4, eval_num_kv_pairs=[])
  results_file = str(tmp_path / "study.json")
  logged = []
  first = recall_sweep.run_sweep(settings, results_file=results_file,
                                 workdir_root=str(tmp_path / "runs"), log=logged.append)
  assert first["ran"] == ["G_K16"] and first["skipped"] == [] and first["stopped_by"] is None
  [record] = recall_sweep.load_records(results_file)
  assert record == first["records"][0]
  assert (record["steps"], record["step_cap"]) == (4, 12)
  assert record["stop_reason"] == "plateau" and record["plateaued"] is True
  assert record["context"] == record["seq_len"] == 32 and record["num_kv_pairs"] == 4
  assert record["sdm_slots"] is None and record["m0_rows_trained_fraction"] is None
  assert "stop rule: plateau at step 4 of 12" in "\n".join(logged)
  assert first["plots"] == ["study_accuracy_vs_state.png"]
  before = (tmp_path / "study.json").read_text()
  again = recall_sweep.run_sweep(settings, results_file=results_file,
                                 workdir_root=str(tmp_path / "elsewhere"), log=logged.append)
  assert again["ran"] == [] and again["skipped"] == ["G_K16"]
  assert (tmp_path / "study.json").read_text() == before
  assert not (tmp_path / "elsewhere").exists() or not any((tmp_path / "elsewhere").iterdir())
  # A run cut after training, before its record: its workdir gives the same record.
  (tmp_path / "study.json").unlink()
  recall_sweep.run_sweep(settings, results_file=results_file,
                         workdir_root=str(tmp_path / "runs"), log=lambda line: None)
  [redone] = recall_sweep.load_records(results_file)
  for field in ("run_key", "steps", "stop_reason", "plateaued", "final_loss", "accuracy"):
    assert redone[field] == record[field], field
  # A second learning rate added later trains only that rate's run.
  more = recall_sweep.run_sweep(dict(settings, peak_lrs=(0.0, 1e-9)), results_file=results_file,
                                workdir_root=str(tmp_path / "runs"), log=lambda line: None)
  assert more["skipped"] == ["G_K16 at lr 0"] and more["ran"] == ["G_K16 at lr 1e-09"]
  assert [r["peak_lr"] for r in recall_sweep.load_records(results_file)] == [0.0, 1e-9]
  # So does a second training seed: the seed-0 runs keep their keys and are skipped.
  seeded = recall_sweep.run_sweep(dict(settings, peak_lrs=(0.0,), seeds=(0, 1)),
                                  results_file=results_file,
                                  workdir_root=str(tmp_path / "runs"), log=logged.append)
  assert seeded["skipped"] == ["G_K16 seed 0"] and seeded["ran"] == ["G_K16 seed 1"]
  records = recall_sweep.load_records(results_file)
  assert [(r["peak_lr"], r["seed"]) for r in records] == [(0.0, 0), (1e-9, 0), (0.0, 1)]
  table = recall_plots.format_record_table(records)
  assert "G_K16 s1 " in table
  # The seed table: G_K16 at rate 0 has seeds 0 and 1; its rate 1e-9 run has one seed.
  seed_lines = recall_plots.format_seed_table(records).splitlines()
  assert len(seed_lines) == 2 and seed_lines[1].startswith("G_K16") and table.endswith(
      seed_lines[1])


def test_needle_runs_are_scored_at_each_context(tmp_path):
  settings = dict(sweep_config.PRESETS["niah_smoke"], mixers="G")
  outcome = recall_sweep.run_sweep(settings, results_file=str(tmp_path / "niah.json"),
                                   workdir_root=str(tmp_path / "runs"), log=lambda line: None)
  records = recall_sweep.load_records(str(tmp_path / "niah.json"))
  assert [(r["mixer"], r["task"], r["context"]) for r in records] == [
      ("G", "multi_key", 16), ("G", "multi_key", 32), ("G", "multi_key", 64)]
  for record in records:
    assert 0 <= record["accuracy"] <= 1 and record["num_kv_pairs"] is None
    assert record["chance"] == 1 / 15  # value tokens [17, 32) of vocabulary 32
    assert record["task_options"] == {"num_keys": 2, "filler": "random"}
  assert outcome["plots"] == ["niah_accuracy_vs_state.png", "niah_accuracy_vs_context.png"]
  for name in outcome["plots"]:
    assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_needle_sweep_into_an_output_dir_plots_too(tmp_path):
  """The output_dir form (one results.json) with a needle task: its plots' titles name the
  task (they had assumed MQAR's pairs and failed)."""
  settings = dict(sweep_config.PRESETS["niah_smoke"], mixers="G")
  outcome = recall_sweep.run_sweep(settings, output_dir=str(tmp_path / "out"),
                                   log=lambda line: None)
  assert outcome["plots"] == ["accuracy_vs_state.png", "accuracy_vs_context.png"]
  assert [p["seq_len"] for p in outcome["models"][0]["by_seq_len"]] == [16, 32, 64]


def test_init_overlaps_report_each_sdm_point_and_seed_beside_chance():
  settings = dict(sweep_config.PRESETS["smoke"], mixers=["G", "M"], sdm_slots=[64, 256],
                  seeds=[0, 1], peak_lrs=[1e-3, 3e-3])
  rows = recall_sweep.init_overlaps(settings, examples=4, batch_size=2)
  assert [(r["name"], r["seed"]) for r in rows] == [
      ("M_N64", 0), ("M_N64", 1), ("M_N256", 0), ("M_N256", 1)]
  for row in rows:
    writes, reads = row["sdm_writes"], row["sdm_reads"]
    assert row["chance_slots"] == writes * reads / row["sdm_slots"]
    assert 0 <= row["overlap_slots"] <= min(writes, reads)
  with pytest.raises(ValueError, match="needs an mqar task"):
    recall_sweep.init_overlaps(dict(sweep_config.PRESETS["niah_smoke"]))


def test_extra_sdm_points_carry_their_own_widths_and_names():
  settings = dict(sweep_config.PRESETS["smoke"], mixers=["M"], sdm_slots=[64],
                  sdm_extra_points=[(256, 8, 8)])
  points = {p["name"]: p["model"] for p in recall_sweep.sweep_points(settings)}
  assert set(points) == {"M_N64", "M_N256_W8"}
  assert (points["M_N256_W8"].sdm_slots, points["M_N256_W8"].sdm_writes,
          points["M_N256_W8"].sdm_reads) == (256, 8, 8)
  assert points["M_N64"].sdm_writes == settings["sdm_writes"]
  with pytest.raises(ValueError, match="\\(N, W, R\\) triples"):
    recall_sweep.sweep_points(dict(settings, sdm_extra_points=[(256, 8)]))


def test_a_balance_weight_names_the_sdm_points_it_applies_to():
  settings = dict(sweep_config.PRESETS["smoke"], mixers=["G", "M"], sdm_balance_weight=0.01)
  points = {p["name"]: p["model"] for p in recall_sweep.sweep_points(settings)}
  assert points["M_N64_bal0.01"].sdm_balance_weight == 0.01
  assert points["G_K16"].sdm_balance_weight == 0.0


def test_a_tied_addressing_init_names_the_sdm_points_it_applies_to():
  settings = dict(sweep_config.PRESETS["smoke"], mixers=["G", "M"],
                  sdm_tied_addressing_init=True)
  points = {p["name"]: p["model"] for p in recall_sweep.sweep_points(settings)}
  assert points["M_N64_tied"].sdm_tied_addressing_init
  assert not points["G_K16"].sdm_tied_addressing_init
