"""The jitted training step, sharded over a `jax.sharding.Mesh` data axis.

Parameters and optimizer state are replicated; each batch is split along its first axis
over the mesh's "data" axis, so the same code runs on one device and on many.
"""

from __future__ import annotations

from typing import Any, Callable

import flax
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

DATA_AXIS = "data"

# loss_fn(params, batch) -> (scalar loss, dict of scalar metrics)
LossFn = Callable[[Any, jax.Array], tuple[jax.Array, dict[str, jax.Array]]]


@flax.struct.dataclass
class TrainState:
  """Everything a checkpoint holds: the step count, parameters and optimizer state.

  `first_nonfinite_step` is -1 while every loss so far was finite, else the first step whose
  loss or gradient was NaN/inf (kept on device so the guard costs no host sync).
  """

  step: jax.Array
  params: Any
  opt_state: Any
  first_nonfinite_step: jax.Array

  @classmethod
  def create(cls, params, optimizer: optax.GradientTransformation) -> "TrainState":
    return cls(step=jnp.zeros((), jnp.int32), params=params, opt_state=optimizer.init(params),
               first_nonfinite_step=jnp.full((), -1, jnp.int32))


def make_mesh(num_devices: int | None = None) -> Mesh:
  """A 1-D mesh over the first `num_devices` devices (all by default), axis "data"."""
  devices = jax.devices()
  num_devices = len(devices) if num_devices is None else num_devices
  if not 1 <= num_devices <= len(devices):
    raise ValueError(f"num_devices must be in [1, {len(devices)}], got {num_devices}")
  return Mesh(np.array(devices[:num_devices]), (DATA_AXIS,))


def replicated(mesh: Mesh) -> NamedSharding:
  return NamedSharding(mesh, PartitionSpec())


def batch_sharding(mesh: Mesh) -> NamedSharding:
  return NamedSharding(mesh, PartitionSpec(DATA_AXIS))


def shard_batch(batch: np.ndarray, mesh: Mesh) -> jax.Array:
  """Places a host batch on the mesh, split along its first axis."""
  devices = mesh.shape[DATA_AXIS]
  if batch.shape[0] % devices:
    raise ValueError(f"batch size {batch.shape[0]} must be divisible by the number of data "
                     f"devices ({devices})")
  return jax.device_put(batch, batch_sharding(mesh))


def global_norm(tree) -> jax.Array:
  """sqrt of the sum of squares of every leaf (float32)."""
  return jnp.sqrt(sum(jnp.sum(jnp.square(x.astype(jnp.float32))) for x in jax.tree.leaves(tree)))


def make_train_step(loss_fn: LossFn, optimizer: optax.GradientTransformation, mesh: Mesh):
  """Returns `step(state, batch) -> (state, metrics)`, jitted with explicit shardings.

  metrics: the loss_fn's metrics plus "loss", "grad_norm" (before clipping) and "finite".
  The input state is donated: its buffers are reused for the output state.
  """

  def step(state: TrainState, batch: jax.Array):
    (loss, metrics), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params, batch)
    grad_norm = global_norm(grads)
    updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
    params = optax.apply_updates(state.params, updates)
    finite = jnp.isfinite(loss) & jnp.isfinite(grad_norm)
    first_bad = jnp.where((state.first_nonfinite_step < 0) & ~finite, state.step,
                          state.first_nonfinite_step)
    new_state = TrainState(step=state.step + 1, params=params, opt_state=opt_state,
                           first_nonfinite_step=first_bad)
    return new_state, {**metrics, "loss": loss, "grad_norm": grad_norm, "finite": finite}

  state_sharding = replicated(mesh)
  return jax.jit(step, in_shardings=(state_sharding, batch_sharding(mesh)),
                 out_shardings=(state_sharding, state_sharding), donate_argnums=0)
