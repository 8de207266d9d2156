"""Maglev's three BPBs: teacher-forced, recurrent (the honest one) and memory-zeroed."""

from __future__ import annotations

import numpy as np
import pytest

from maglev_jax.evaluation import maglev_evaluator, maglev_nll_fn
from tests.maglev_jax.helpers import random_params, random_tokens, tiny_model


def test_evaluator_reports_all_sources_and_the_recurrent_one_as_val_bpb():
  model = tiny_model(num_layers=1, prefiller_pattern="A")
  params = random_params(model)
  stream = np.asarray(random_tokens(model, 1, 41)[0])  # 40 targets: 4 windows of 10
  result = maglev_evaluator(model, stream, batch_size=4, seq_len=10, max_tokens=None)(params)
  assert result["val_tokens"] == result["val_bytes"] == 40  # ids < 256: one byte each
  assert result["val_bpb"] == result["bpb_recurrent"]
  # Random parameters: the three memory sources give three different models.
  bpbs = [result[f"bpb_{s}"] for s in ("teacher_forced", "recurrent", "memory_zeroed")]
  assert len(set(bpbs)) == 3 and all(np.isfinite(bpbs))


def test_unknown_memory_source_is_named():
  with pytest.raises(ValueError, match="source must be one of"):
    maglev_nll_fn(tiny_model(), "oracle")
