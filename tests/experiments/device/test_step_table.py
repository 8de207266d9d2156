"""The device calls' step figures read back into one table."""

from __future__ import annotations

from experiments.device import step_table

# Lines as `common.sh`'s step_rounds (`grep -Ho`) and call 49b's baseline run append them.
CALLS_LOG = """\
== s_m49_a rc=0 52 s (limit 75)
/tmp/out/s_a48_a.log:"config": "sdm_small", "batch_size": 16, "step_back_to_back_ms": 43.10
/tmp/out/s_a48c32_a.log:"config": "sdm_small", "batch_size": 16, "step_back_to_back_ms": 44.50
/tmp/out/s_m49_a.log:"config": "sdm_small", "batch_size": 16, "step_back_to_back_ms": 43.60
/tmp/out/s_m49_b.log:"config": "sdm_small", "batch_size": 16, "step_back_to_back_ms": 43.70
/tmp/out/s_gdn.log:"config": "gdn_small", "batch_size": 16, "step_back_to_back_ms": 19.00
""".splitlines()


def test_runs_are_keyed_by_config_tree_and_round():
  figures = step_table.step_figures(CALLS_LOG)
  assert figures == {
      ("sdm_small", "a48"): {"a": 43.10},
      ("sdm_small", "a48c32"): {"a": 44.50},  # the tree's name ends in digits, no "_"
      ("sdm_small", "m49"): {"a": 43.60, "b": 43.70},
      ("gdn_small", "gdn"): {"-": 19.00},
  }


def test_table_gives_the_difference_from_the_baseline_and_the_ratio():
  rows = step_table.table(step_table.step_figures(CALLS_LOG), baseline="m49")
  by_tree = {row.split()[1]: row.split() for row in rows[1:]}
  # a48: 43.10 against m49's mean 43.65; ratio to gdn_small's 19.00.
  assert by_tree["a48"][-2:] == ["-0.55", "2.27x"]
  assert by_tree["m49"][-4:] == ["43.70", "43.65", "+0.00", "2.30x"]
  assert by_tree["gdn"][-2:] == ["19.00", "19.00"]  # the reference: no difference, no ratio
