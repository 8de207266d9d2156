"""The decode benchmark runs end to end at tiny sizes and reports every combination."""

from __future__ import annotations

import json


def test_bench_decode_reports_each_mixer_batch_and_context(run_cli):
  stdout = run_cli("bench_decode", "--d_model=32", "--heads=2", "--window=8", "--gdn_heads=2",
                   "--gdn_head_dim=8", "--sdm_slots=256", "--sdm_writes=4", "--sdm_reads=4",
                   "--contexts=16,64", "--batches=2", "--repeats=1", "--warmup=1",
                   "--compute_dtype=float32", "--models=gdn_tiny", "--model_contexts=16,40",
                   "--model_steps=3", "--attention_decode_impl=xla")  # reaches the models too
  result = json.loads(stdout.strip().splitlines()[-1])
  rows = {(r["mixer"], r["context"]): r for r in result["results"]}
  assert result["peers"] == []  # --sdpa_peer is off by default
  assert set(rows) == {(m, c) for m in "MGSA" for c in (16, 64)}
  assert all(r["step_ms"] > 0 and r["scan_step_ms"] > 0 and r["scan_back_to_back_ms"] > 0
             for r in rows.values())
  models = {(r["model"], r["context"]): r for r in result["models"]}
  assert set(models) == {("gdn_tiny", 16), ("gdn_tiny", 40)}
  assert all(r["tokens_per_s"] > 0 and r["batch"] == 2 and r["steps"] == 3
             for r in models.values())
  # Recurrent and windowed caches are constant in the context; full attention's grows.
  for mixer in "MGS":
    assert rows[(mixer, 16)]["cache_bytes_per_sequence"] == rows[(mixer, 64)][
        "cache_bytes_per_sequence"]
  assert rows[("A", 64)]["cache_bytes_per_sequence"] > 3 * rows[("A", 16)][
      "cache_bytes_per_sequence"]
