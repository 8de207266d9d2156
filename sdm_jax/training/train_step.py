"""The jitted training step on a (data, fsdp, model) mesh (`sdm_jax.sharding`).

The batch is split along its first axis over data x fsdp. Parameters and optimizer state
are sharded by `state_shardings`: over "fsdp" ZeRO-3 style (each leaf along its largest
divisible dimension; XLA gathers a leaf where it is used and reduce-scatters its gradient)
and SDM's M0 also over "model" along its value columns. With the default mesh (every device
on "data") everything is replicated and this is plain data parallelism; on one device the
same code runs unsharded.
"""

from __future__ import annotations

from typing import Any, Callable

import flax
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from sdm_jax import sharding
from sdm_jax.layers.sparse_delta_memory import INITIAL_MEMORY_NAME
from sdm_jax.sharding import BATCH_AXES, FSDP_AXIS, MODEL_AXIS

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


def replicated(mesh: Mesh) -> NamedSharding:
  return NamedSharding(mesh, PartitionSpec())


def batch_sharding(mesh: Mesh) -> NamedSharding:
  """Rows split over data x fsdp, replicated over model."""
  return NamedSharding(mesh, PartitionSpec(BATCH_AXES))


def shard_batch(batch: np.ndarray, mesh: Mesh) -> jax.Array:
  """Places the step's global host batch on the mesh, split along its first axis.

  Every process holds the same global batch (a pure function of the step) and transfers
  only the rows of its own devices, so this serves one process and many alike.
  """
  devices = sharding.batch_devices(mesh)
  if batch.shape[0] % devices:
    raise ValueError(f"TrainConfig.batch_size ({batch.shape[0]}) must be divisible by the "
                     f"devices the batch is split over (data x fsdp = {devices})")
  return jax.make_array_from_callback(batch.shape, batch_sharding(mesh),
                                      lambda index: batch[index])


def _leaf_spec(path, shape: tuple[int, ...], mesh: Mesh) -> PartitionSpec:
  """M0 [H, N, Dv] split over "model" along Dv; then the largest dimension "fsdp" divides
  split over "fsdp"; scalars and leaves nothing divides stay whole."""
  spec = [None] * len(shape)
  name = getattr(path[-1], "key", getattr(path[-1], "name", None)) if path else None
  model, fsdp = mesh.shape[MODEL_AXIS], mesh.shape[FSDP_AXIS]
  if name == INITIAL_MEMORY_NAME and len(shape) == 3 and model > 1 and shape[-1] % model == 0:
    spec[-1] = MODEL_AXIS
  if fsdp > 1:
    free = [d for d in range(len(shape)) if spec[d] is None and shape[d] % fsdp == 0]
    if free:
      spec[max(free, key=lambda d: shape[d])] = FSDP_AXIS
  return PartitionSpec(*spec)


def state_shardings(tree: Any, mesh: Mesh) -> Any:
  """The NamedSharding of every leaf of `tree` (a TrainState, parameters, or their shapes).

  Adam's moments mirror the parameters' paths and shapes, so they shard as the parameters.
  """
  return jax.tree_util.tree_map_with_path(
      lambda path, leaf: NamedSharding(mesh, _leaf_spec(path, np.shape(leaf), mesh)), tree)


def init_state(init_params: Callable[[jax.Array], Any], optimizer: optax.GradientTransformation,
               mesh: Mesh, rng: jax.Array) -> tuple[TrainState, Any]:
  """A fresh TrainState created directly in its shards (no device ever holds a whole
  sharded leaf); returns (state, its shardings)."""
  create = lambda rng: TrainState.create(init_params(rng), optimizer)  # noqa: E731
  with jax.set_mesh(mesh):
    shardings = state_shardings(jax.eval_shape(create, rng), mesh)
    return jax.jit(create, out_shardings=shardings)(rng), shardings


def tree_bytes(tree: Any) -> tuple[int, int]:
  """(bytes of every leaf of a tree of arrays, bytes each device holds of them): every
  leaf's shards are equal, `state_shardings` splitting only dimensions the axes divide."""
  total, per_device = 0, 0
  for leaf in jax.tree.leaves(tree):
    itemsize = np.dtype(leaf.dtype).itemsize
    total += int(np.prod(leaf.shape)) * itemsize
    shard_shape = leaf.sharding.shard_shape(leaf.shape) if hasattr(leaf, "sharding") else \
        leaf.shape
    per_device += int(np.prod(shard_shape)) * itemsize
  return total, per_device


def global_norm(tree) -> jax.Array:
  """sqrt of the sum of squares of every leaf (float32)."""
  return jnp.sqrt(sum(jnp.sum(jnp.square(x.astype(jnp.float32))) for x in jax.tree.leaves(tree)))


def make_train_step(loss_fn: LossFn, optimizer: optax.GradientTransformation, mesh: Mesh,
                    state_sharding: Any):
  """Returns `step(state, batch) -> (state, metrics)`, jitted with explicit shardings.

  state_sharding: the state's shardings (`state_shardings`, or one sharding such as
  `replicated(mesh)` for every leaf); the new state keeps them. The loss traces with `mesh`
  in JAX's context, so the layers split their ops over it (`sdm_jax.sharding.over_mesh`).
  metrics: the loss_fn's metrics plus "loss", "grad_norm" (before clipping) and "finite",
  replicated. The input state is donated: its buffers are reused for the output state.
  """

  def step(state: TrainState, batch: jax.Array):
    with jax.sharding.use_abstract_mesh(mesh.abstract_mesh):
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

  return jax.jit(step, in_shardings=(state_sharding, batch_sharding(mesh)),
                 out_shardings=(state_sharding, replicated(mesh)), donate_argnums=0)
