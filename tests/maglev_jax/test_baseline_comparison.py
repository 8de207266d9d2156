"""`maglev_jax.baseline_comparison`: the table of a summary. Training and prefill timing
run end to end in tests/experiments/test_maglev_compare.py."""

from __future__ import annotations

from maglev_jax.baseline_comparison import format_table
from sdm_jax.metrics import BPB_UNAVAILABLE


def test_table_shows_losses_where_bytes_per_token_are_unknown():
  losses = dict(loss_teacher_forced=5.25, loss_recurrent=5.5, loss_memory_zeroed=6.75)
  summary = {
      "size": "tiny", "device": "cpu", "steps": 2, "tokens_per_model": 256,
      "unigram_bpb": None, "bpb_unavailable": BPB_UNAVAILABLE, "prefill": {},
      "models": {
          "maglev_tiny": {"parameters_total": 1000, "val_bpb": None, "val_loss": 5.5,
                          "bpb_teacher_forced": None, "bpb_recurrent": None,
                          "bpb_memory_zeroed": None, **losses, "wall_s": 3.0},
          "maglev_tiny_swa": {"parameters_total": 900, "val_bpb": None, "val_loss": 6.125,
                              "wall_s": 2.0}}}
  table = format_table(summary)
  assert "BPB not reported" in table and "val_loss" in table
  maglev_row = next(line for line in table.splitlines() if line.startswith("maglev_tiny "))
  assert maglev_row.split()[2:6] == ["5.5000", "5.2500", "5.5000", "6.7500"]
  swa_row = next(line for line in table.splitlines() if line.startswith("maglev_tiny_swa"))
  assert swa_row.split()[2:6] == ["6.1250", "-", "-", "-"]
  # The config family's size titles the table where the summary names one (the CLI's do).
  assert table.splitlines()[0].startswith("tiny on cpu: 2 steps, 256 tokens per model")
  without_size = {key: value for key, value in summary.items() if key != "size"}
  assert format_table(without_size).splitlines()[0].startswith("cpu: 2 steps")
