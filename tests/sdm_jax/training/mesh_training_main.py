"""Run in a subprocess with 8 forced host devices (`python -m ... <config name>`): trains
`sdm_tiny` or `gdn_tiny`, cut to their last two layers (SM, SG: a sliding-window layer and
the memory layer) to keep compiles short, on 8 sequences of 32 tokens for 3 steps, on one
device and on the meshes (8), (2, 2, 2), (1, 4, 2) (gdn_tiny: on (2, 2, 2) only, where its
heads split; the meshes and checkpoints themselves are sdm_tiny's part); for sdm_tiny saves
a checkpoint on (2, 2, 2) and restores it onto (1, 4, 2) and onto one device, and splits
the op's Pallas path (the GPU default, interpreted here) over (2, 2, 2). Prints one JSON
line of what the test checks."""

import os
import sys

# Eight CPU devices, and XLA's cheap optimisation levels (compiling dominates this test).
os.environ["XLA_FLAGS"] = ("--xla_force_host_platform_device_count=8 "
                           "--xla_llvm_disable_expensive_passes=true "
                           "--xla_backend_optimization_level=0")

import functools  # noqa: E402
import json  # noqa: E402
import tempfile  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from experiments import common  # noqa: E402
from experiments.configs import gdn_tiny, sdm_tiny  # noqa: E402
from sdm_jax import sharding  # noqa: E402
from sdm_jax.layers.sparse_delta_memory import OP_LAYOUTS as SDM_OP_LAYOUTS  # noqa: E402
from sdm_jax.models.lm import LM, init_function  # noqa: E402
from sdm_jax.ops.sparse_delta import sparse_delta_rule  # noqa: E402
from sdm_jax.sharding import make_mesh  # noqa: E402
from sdm_jax.training.checkpoint import Checkpointer  # noqa: E402
from sdm_jax.training.lm_training import lm_loss_fn  # noqa: E402
from sdm_jax.training.optim import optimizer_for  # noqa: E402
from sdm_jax.training.train_step import (init_state, make_train_step, shard_batch,  # noqa: E402
                                         tree_bytes)

SAVED_ON, RESTORED_ON = "data=2,fsdp=2,model=2", "data=1,fsdp=4,model=2"
MESHES = {"sdm_tiny": (None, "data=8", SAVED_ON, RESTORED_ON), "gdn_tiny": (None, SAVED_ON)}
STEPS = 3


def shard_map_shapes(jaxpr) -> list[dict[str, list[list[int]]]]:
  """The per-device argument and result shapes of every shard_map in a jaxpr (nested too)."""
  found = []
  for eqn in jaxpr.eqns:
    if eqn.primitive.name == "shard_map":
      body = eqn.params["jaxpr"]
      found.append({"in": [list(v.aval.shape) for v in body.invars],
                    "out": [list(v.aval.shape) for v in body.outvars]})
    for param in eqn.params.values():
      for sub in (param if isinstance(param, (tuple, list)) else (param,)):
        inner = getattr(sub, "jaxpr", sub)
        if hasattr(inner, "eqns"):
          found.extend(shard_map_shapes(inner))
  return found


def leaf_named(tree, name: str):
  """The leaves of a tree whose path ends in `name` (M0 of the params and of Adam's moments)."""
  return [leaf for path, leaf in jax.tree_util.tree_leaves_with_path(tree)
          if getattr(path[-1], "key", None) == name]


def pallas_op_on_mesh() -> float:
  """The Pallas phase 2 (interpret mode on CPU) of SDM's op split by `over_mesh` over
  (2, 2, 2) against the same op whole: the largest relative difference in the loss value and
  the gradients w.r.t. M0, v, beta and g (Dv = 32: 16 columns per device)."""
  batch, length, heads, slots, columns, count = 4, 16, 1, 64, 32, 4
  rng = np.random.default_rng(1)
  ids = lambda: jnp.asarray(np.stack([rng.choice(slots, count, replace=False)  # noqa: E731
                                      for _ in range(batch * length * heads)]).reshape(
                                          batch, length, heads, count), jnp.int32)
  normal = lambda *shape: jnp.asarray(rng.normal(size=shape), jnp.float32)  # noqa: E731
  write_idx, read_idx = ids(), ids()
  write_w = jax.nn.softmax(normal(batch, length, heads, count))
  read_w = jax.nn.softmax(normal(batch, length, heads, count))
  m0, v = normal(heads, slots, columns), normal(batch, length, heads, columns)
  beta = jax.nn.sigmoid(normal(batch, length, heads))
  g = -jax.nn.softplus(normal(batch, length, heads))
  op = functools.partial(sparse_delta_rule, chunk_size=16, impl="pallas")

  def loss(split, m0, v, beta, g):
    run = sharding.over_mesh(op, **SDM_OP_LAYOUTS) if split else op
    out, final = run(m0, write_idx, write_w, v, beta, g, read_idx, read_w)
    return jnp.sum(jnp.sin(out)) + 0.01 * jnp.sum(jnp.square(final))

  args = (m0, v, beta, g)
  whole = jax.jit(jax.value_and_grad(functools.partial(loss, False), argnums=(0, 1, 2, 3)))(
      *args)
  with jax.set_mesh(make_mesh("data=2,fsdp=2,model=2")):
    split = jax.jit(jax.value_and_grad(functools.partial(loss, True), argnums=(0, 1, 2, 3)))(
        *args)
  return max(float(jnp.max(jnp.abs(a - b)) / jnp.max(jnp.abs(a)))
             for a, b in zip(jax.tree.leaves(whole), jax.tree.leaves(split)))


def main(config_name: str):
  assert jax.device_count() == 8, jax.devices()
  config = {"sdm_tiny": sdm_tiny, "gdn_tiny": gdn_tiny}[config_name].get_config()
  config.model.update(num_layers=2, pattern=config.model.pattern[-2:])
  config.train.update(batch_size=8, seq_len=32, steps=STEPS, warmup_steps=0)
  model_config, train_config, _ = common.lm_configs(config)
  model = LM(model_config)
  optimizer = optimizer_for(train_config)
  init_params = init_function(model, train_config.seq_len)
  rng = np.random.default_rng(0)
  batches = [rng.integers(0, model_config.vocab_size, (8, 33)).astype(np.int32)
             for _ in range(STEPS + 1)]
  result = {"losses": {}, "grad_norms": {}, "shard_maps": {}, "m0_shards": {},
            "param_bytes": {}}
  steps, checkpoint_dir = {}, tempfile.mkdtemp()
  restores = RESTORED_ON in MESHES[config_name]
  for spec in MESHES[config_name]:
    mesh = make_mesh(spec, num_devices=1 if spec is None else None)
    name = spec or "one device"
    state, shardings = init_state(init_params, optimizer, mesh, jax.random.PRNGKey(0))
    step = make_train_step(lm_loss_fn(model), optimizer, mesh, shardings)
    result["shard_maps"][name] = shard_map_shapes(
        jax.make_jaxpr(step)(state, shard_batch(batches[0], mesh)).jaxpr)
    result["param_bytes"][name] = tree_bytes(state.params)
    losses, grad_norms = [], []
    for batch in batches[:STEPS]:
      state, metrics = step(state, shard_batch(batch, mesh))
      losses.append(float(metrics["loss"]))
      grad_norms.append(float(metrics["grad_norm"]))
    result["losses"][name], result["grad_norms"][name] = losses, grad_norms
    steps[name] = (state, shardings, mesh, step)
    result["m0_shards"][name] = sorted(
        {str(tuple(shard.data.shape)) for leaf in leaf_named(state, "M0")
         for shard in leaf.addressable_shards})
    if spec == SAVED_ON and restores:
      checkpointer = Checkpointer(checkpoint_dir)
      checkpointer.save(STEPS, state)
      checkpointer.close()
      saved = jax.device_get(state)
      result["next_loss_saved_mesh"] = float(step(state, shard_batch(batches[STEPS], mesh))[1][
          "loss"])

  # Restore the (2, 2, 2) checkpoint onto (1, 4, 2) and onto one device.
  result["restore"] = {}
  for name in (RESTORED_ON, "one device") if restores else ():
    like, shardings, mesh, step = steps[name]  # that mesh's own trained state
    checkpointer = Checkpointer(checkpoint_dir)
    restored = checkpointer.restore(like)
    checkpointer.close()
    same_values = all(np.array_equal(a, b) for a, b in zip(
        jax.tree.leaves(jax.device_get(restored)), jax.tree.leaves(saved)))
    same_shardings = all(leaf.sharding == sharding for leaf, sharding in zip(
        jax.tree.leaves(restored), jax.tree.leaves(shardings)))
    next_loss = float(step(restored, shard_batch(batches[STEPS], mesh))[1]["loss"])
    result["restore"][name] = {"same_values": same_values, "same_shardings": same_shardings,
                               "next_loss": next_loss}
  if config_name == "sdm_tiny":
    result["pallas_op_relative_error"] = pallas_op_on_mesh()
  print(json.dumps(result))


if __name__ == "__main__":
  main(*(sys.argv[1:] or ["sdm_tiny"]))
