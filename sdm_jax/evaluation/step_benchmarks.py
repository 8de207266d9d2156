"""Times one language-model training step, and where its device time goes.

`experiments.compare` reports step times from a real run (data, evaluation, checkpoints);
this times the step alone (`train_step.make_train_step`, the loop's own step: forward,
backward, gradient norm, optimizer update) on random tokens, with `top_ops` the costliest
device ops of a step, so that two models' steps can be compared op by op (issue 11: what
`sdm_small` spends beyond `gdn_small`). Registered in `experiments/bench_ops.py` as
`--op=train_step`.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from sdm_jax.evaluation import timing
from sdm_jax.models.config import LMConfig
from sdm_jax.models.lm import LM, init_function
from sdm_jax.sharding import make_mesh, mesh_sizes
from sdm_jax.training.lm_training import lm_loss_fn
from sdm_jax.training.optim import optimizer_for
from sdm_jax.training.config import TrainConfig
from sdm_jax.training.train_step import init_state, make_train_step, shard_batch, tree_bytes


def benchmark_train_step(model_config: LMConfig, train_config: TrainConfig, *, warmup: int,
                         repeats: int, top_ops: int = 0, seed: int = 0,
                         hlo_path: str | None = None) -> dict[str, Any]:
  """Times `train_config`'s step of `LM(model_config)` on random tokens
  [batch_size, seq_len + 1] (the batch `stream_batches` draws), on `train_config.mesh`.

  Returns {"batch_size", "seq_len", "mesh", "param_bytes", "step_ms", "step_min_ms",
  "step_back_to_back_ms"} (`timing.time_call`; each call takes the previous call's state,
  which the step donates) and, with `top_ops` > 0, "top_ops" (`timing.device_time_by_op`).
  hlo_path: where to write the compiled step's optimized HLO (its ops' names are the
  profile's; `experiments.hlo_launches --profile` sums their time by source line).
  """
  if warmup < 1:
    raise ValueError(f"warmup must be >= 1 (the first call's one-time costs are not "
                     f"timed), got {warmup}")
  mesh = make_mesh(train_config.mesh, num_devices=train_config.num_devices)
  model = LM(model_config)
  optimizer = optimizer_for(train_config)
  state, shardings = init_state(init_function(model, train_config.seq_len), optimizer, mesh,
                                jax.random.PRNGKey(seed))
  step = make_train_step(lm_loss_fn(model), optimizer, mesh, shardings)
  tokens = jax.random.randint(jax.random.PRNGKey(seed + 1),
                              (train_config.batch_size, train_config.seq_len + 1), 0,
                              model_config.vocab_size, jnp.int32)
  batch = shard_batch(jax.device_get(tokens), mesh)
  # Compiled once: the timed calls run it, and its HLO names the profile's sources.
  compiled = step.lower(state, batch).compile()
  if hlo_path:
    with open(hlo_path, "w") as f:
      f.write(compiled.as_text())
  current = [state]  # the step donates its input state: each call continues from the last

  def one_step():
    current[0], metrics = compiled(current[0], batch)
    return metrics["loss"]

  measured = timing.time_call(one_step, warmup=warmup, repeats=repeats)
  result = {
      "batch_size": train_config.batch_size, "seq_len": train_config.seq_len,
      "mesh": mesh_sizes(mesh), "param_bytes": tree_bytes(current[0].params)[0],
      "step_ms": measured["median_ms"], "step_min_ms": measured["min_ms"],
      "step_back_to_back_ms": measured["back_to_back_ms"],
  }
  if top_ops:
    # The HLO names the sources the profiler leaves at the module (XLA's fusions, library
    # calls).
    result["top_ops"] = timing.device_time_by_op(one_step, top=top_ops,
                                                 hlo_text=compiled.as_text())
  return result
