"""The training-step benchmark (`bench_ops --op=train_step`) runs a tiny model on CPU."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sdm_jax.evaluation import step_benchmarks
from sdm_jax.models.config import LMConfig
from sdm_jax.models.lm import LM
from sdm_jax.training.config import TrainConfig

MODEL = LMConfig(vocab_size=32, d_model=16, num_layers=2, pattern="SM", num_heads=2,
                 window=4, max_seq_len=12, sdm_heads=2, sdm_slots=64, sdm_writes=3,
                 sdm_reads=2, sdm_chunk_size=4)
TRAIN = TrainConfig(batch_size=3, seq_len=12, steps=10, warmup_steps=1)


def test_times_the_step_of_the_configs_model(tmp_path):
  hlo_path = str(tmp_path / "step.hlo.txt")
  result = step_benchmarks.benchmark_train_step(MODEL, TRAIN, warmup=1, repeats=2, top_ops=2,
                                                hlo_path=hlo_path)
  assert (result["batch_size"], result["seq_len"]) == (3, 12)
  assert result["mesh"] == {"data": 1, "fsdp": 1, "model": 1}
  params = jax.eval_shape(lambda: LM(MODEL).init(jax.random.PRNGKey(0),
                                                 jnp.zeros((1, 12), jnp.int32)))
  expected_bytes = sum(np.prod(x.shape) * x.dtype.itemsize for x in jax.tree.leaves(params))
  assert result["param_bytes"] == expected_bytes
  assert 0 < result["step_min_ms"] <= result["step_ms"]
  assert result["step_back_to_back_ms"] > 0
  assert isinstance(result["top_ops"], list)  # empty on CPU: no device ops recorded
  with open(hlo_path) as f:  # the compiled step, whose op names the profile's rows carry
    assert f.read().startswith("HloModule")


def test_needs_a_warmup_call():
  with pytest.raises(ValueError, match="warmup"):
    step_benchmarks.benchmark_train_step(MODEL, TRAIN, warmup=0, repeats=1)
