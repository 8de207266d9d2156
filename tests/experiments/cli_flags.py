"""Building command lines for the entry points in tests."""

from __future__ import annotations

from typing import Any

# Narrow versions of the tiny LM configs (gdn_tiny, sdm_tiny, hybrids): the same patterns,
# seconds of CPU compilation.
TOY_LM_MODEL = dict(d_model=32, num_heads=2, window=8, max_seq_len=32, gdn_heads=2,
                    gdn_head_dim=16, sdm_slots=256, sdm_writes=8, sdm_reads=8,
                    sdm_chunk_size=16)
TOY_LM_TRAIN = dict(seq_len=32, batch_size=2, log_every=1, eval_batch_size=2, eval_tokens=64)


def config_overrides(section: str, values: dict[str, Any]) -> list[str]:
  """["--config.<section>.<field>=<value>", ...]: ml_collections' override flags."""
  return [f"--config.{section}.{name}={value}" for name, value in values.items()]
