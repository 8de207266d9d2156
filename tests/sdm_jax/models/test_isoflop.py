"""The isoFLOP match of an SDM mixer to a GDN mixer."""

from __future__ import annotations

import pytest

from sdm_jax.models.config import LMConfig
from sdm_jax.models.isoflop import sdm_matching_gdn

GDN = LMConfig(d_model=128, num_layers=4, pattern="SSSG", num_heads=4, gdn_heads=4,
               gdn_head_dim=32, max_seq_len=128, window=32)


def test_match_reads_and_writes_the_gdn_key_dim_at_equal_flops():
  fields, report = sdm_matching_gdn(GDN)
  assert fields == {"sdm_heads": 1, "sdm_slots": 64 * 64, "sdm_writes": 32, "sdm_reads": 32}
  assert report["gdn"]["flops_per_token"] == 193_536  # 2 d (2HK + 2HV + 2H) + 2HVd + convs + 6HKV
  assert abs(report["flops_ratio"] - 1) < 0.05
  assert abs(report["parameter_ratio"] - 1) < 0.05
  assert report["sdm"]["memory_m0_parameters"] == report["sdm"]["state_entries"] == 4096 * 128
  assert report["gdn"]["state_entries"] == 4 * 32 * 32
  assert report["state_ratio"] == 128


def test_fewer_heads_give_a_larger_table_at_the_same_flops():
  one, report_one = sdm_matching_gdn(GDN, heads=1)
  four, report_four = sdm_matching_gdn(GDN, heads=4)
  assert four["sdm_heads"] == 4 and four["sdm_writes"] == 32
  assert abs(report_four["flops_ratio"] - 1) < 0.05
  assert report_one["state_ratio"] > report_four["state_ratio"]


def test_heads_must_divide_the_width():
  with pytest.raises(ValueError, match="heads"):
    sdm_matching_gdn(GDN, heads=3)
