"""The isoFLOP match of an SDM mixer `M` to a Gated DeltaNet mixer `G` (DESIGN.md 3.3).

W = R = GDN's per-head key dim K; the sub-key count S (the key width H * 2S) is the one
whose mixer FLOPs per token come closest to GDN's, taken from multiples of
`sub_key_multiple`. H stays a free knob: fewer heads give a larger table at the same FLOPs.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from sdm_jax.models.config import LMConfig
from sdm_jax.models.describe import parameter_counts
from sdm_jax.models.mixers import MIXERS


def _one_layer(config: LMConfig, letter: str, **fields) -> LMConfig:
  return dataclasses.replace(config, pattern=letter, num_layers=1, **fields)


def _mixer_summary(config: LMConfig, letter: str, state_entries: int) -> dict[str, float]:
  counts = parameter_counts(config)
  return {"flops_per_token": float(MIXERS[letter].flops_per_token(config, config.max_seq_len)),
          "non_memory_parameters": counts[f"mixer_{letter}"],
          "memory_m0_parameters": counts["memory_m0"],
          "state_entries": state_entries}


def sdm_matching_gdn(config: LMConfig, *, heads: int = 1, sub_key_multiple: int = 8
                     ) -> tuple[dict[str, int], dict[str, Any]]:
  """The SDM fields whose `M` mixer matches the `G` mixer of `config` at equal FLOPs.

  Args:
    config: an LMConfig whose gdn_* fields describe the GDN mixer (its pattern is ignored).
    heads: H of the SDM mixer (d_model must be divisible by it).
    sub_key_multiple: S is chosen among multiples of this (8: tables of friendly sizes).

  Returns:
    fields: {"sdm_heads", "sdm_slots", "sdm_writes", "sdm_reads"} for LMConfig.
    report: {"gdn": {...}, "sdm": {...}, "flops_ratio", "parameter_ratio", "state_ratio"};
      each mixer's FLOPs/token, non-memory parameters, M0 parameters and state entries per
      sequence; ratios are SDM / GDN.
  """
  if heads < 1 or config.d_model % heads:
    raise ValueError(f"heads must be >= 1 and divide d_model ({config.d_model}), got {heads}")
  if sub_key_multiple < 1:
    raise ValueError(f"sub_key_multiple must be >= 1, got {sub_key_multiple}")
  key_dim = config.resolved_gdn_head_dim
  gdn = _one_layer(config, "G")
  target = MIXERS["G"].flops_per_token(gdn, gdn.max_seq_len)

  def sdm_fields(sub_keys: int) -> dict[str, int]:
    return {"sdm_heads": heads, "sdm_slots": sub_keys * sub_keys, "sdm_writes": key_dim,
            "sdm_reads": key_dim}

  def sdm_flops(sub_keys: int) -> float:
    sdm = _one_layer(config, "M", **sdm_fields(sub_keys))
    return MIXERS["M"].flops_per_token(sdm, sdm.max_seq_len)

  # The slots must hold W ids: S * S >= K. FLOPs grow with S, so walk up to the target.
  sub_keys = sub_key_multiple
  while sub_keys * sub_keys < key_dim:
    sub_keys += sub_key_multiple
  while sdm_flops(sub_keys + sub_key_multiple) <= target:
    sub_keys += sub_key_multiple
  above = sub_keys + sub_key_multiple
  if abs(sdm_flops(above) - target) < abs(sdm_flops(sub_keys) - target):
    sub_keys = above

  fields = sdm_fields(sub_keys)
  gdn_state = (gdn.resolved_gdn_heads * key_dim * int(gdn.gdn_expand_v * key_dim))
  gdn_summary = _mixer_summary(gdn, "G", gdn_state)
  sdm_summary = _mixer_summary(_one_layer(config, "M", **fields), "M",
                               fields["sdm_slots"] * config.d_model)
  report = {
      "gdn": gdn_summary,
      "sdm": sdm_summary,
      "flops_ratio": sdm_summary["flops_per_token"] / gdn_summary["flops_per_token"],
      "parameter_ratio": (sdm_summary["non_memory_parameters"]
                          / gdn_summary["non_memory_parameters"]),
      "state_ratio": sdm_summary["state_entries"] / gdn_summary["state_entries"],
  }
  return fields, report
