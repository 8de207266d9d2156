"""Run in a subprocess with 4 forced host devices: one train step on a 4-device mesh and on
a 1-device mesh from the same state and batch; prints the max parameter difference."""

import json
import os

# Four CPU devices, and XLA's cheap optimisation levels (compiling dominates this test).
os.environ["XLA_FLAGS"] = ("--xla_force_host_platform_device_count=4 "
                           "--xla_llvm_disable_expensive_passes=true "
                           "--xla_backend_optimization_level=0")

import jax  # noqa: E402  pylint: disable=g-import-not-at-top
import numpy as np  # noqa: E402

from sdm_jax.models.config import LMConfig  # noqa: E402
from sdm_jax.models.lm import LM  # noqa: E402
from sdm_jax.training.config import TrainConfig  # noqa: E402
from sdm_jax.sharding import make_mesh  # noqa: E402
from sdm_jax.training.train_step import (TrainState, make_train_step,  # noqa: E402
                                         replicated, shard_batch)
from sdm_jax.training.lm_training import lm_loss_fn  # noqa: E402
from sdm_jax.training.optim import optimizer_for  # noqa: E402


def main():
  assert len(jax.devices()) == 4, jax.devices()
  model = LM(LMConfig(vocab_size=259, d_model=32, num_layers=2, pattern="SA", num_heads=2,
                      window=8, max_seq_len=32))
  optimizer = optimizer_for(TrainConfig(steps=10, warmup_steps=0, peak_lr=1e-3))
  batch = np.random.default_rng(0).integers(0, 259, (8, 33)).astype(np.int32)
  results = {}
  for devices in (1, 4):
    mesh = make_mesh(num_devices=devices)
    # Fresh parameters per run: the step donates (and so deletes) its input state.
    params = model.init(jax.random.PRNGKey(0), batch[:, :-1])
    state = jax.device_put(TrainState.create(params, optimizer), replicated(mesh))
    step = make_train_step(lm_loss_fn(model), optimizer, mesh, replicated(mesh))
    for _ in range(2):
      state, metrics = step(state, shard_batch(batch, mesh))
    results[devices] = (jax.device_get(state.params), float(metrics["loss"]),
                        float(metrics["grad_norm"]))
  diffs = jax.tree.leaves(jax.tree.map(lambda a, b: float(np.max(np.abs(a - b))),
                                       results[1][0], results[4][0]))
  print(json.dumps({"max_param_diff": max(diffs), "loss_1": results[1][1],
                    "loss_4": results[4][1], "grad_norm_1": results[1][2],
                    "grad_norm_4": results[4][2]}))


if __name__ == "__main__":
  main()
