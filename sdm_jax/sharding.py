"""The named device mesh of training and how layers run their ops on it.

Three axes, each of size 1 unless asked for (`TrainConfig.mesh`, e.g. "data=2,fsdp=2,model=2"):
  data:  the batch is split; parameters and optimizer state are replicated over it.
  fsdp:  the batch is split too, and parameters and optimizer state are sharded over it
         (ZeRO-3; `training.train_step.state_shardings`): XLA gathers them where used.
  model: SDM's per-sequence table [B, H, N, Dv] and learned M0 [H, N, Dv] are split along
         the value columns Dv, GDN and attention along their heads.

SDM's recurrence is independent per value column (every plan coefficient is table-free,
DESIGN.md 3.4), and GDN's and attention's per head, so each op runs under `shard_map` on its
own slice with no communication inside (`over_mesh`); the readings meet the output
projection afterwards. Layers find the mesh in JAX's context (`make_train_step` traces the
loss under it, `fit` evaluates under `jax.set_mesh`); without one they call the op as is.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import jax
import numpy as np
from jax.sharding import AxisType, Mesh, PartitionSpec

DATA_AXIS = "data"
FSDP_AXIS = "fsdp"
MODEL_AXIS = "model"
MESH_AXES = (DATA_AXIS, FSDP_AXIS, MODEL_AXIS)
# The batch is split over both: FSDP is data parallelism with sharded parameters.
BATCH_AXES = (DATA_AXIS, FSDP_AXIS)

MESH_FIELD = "TrainConfig.mesh (--config.train.mesh)"


def parse_mesh(spec: str) -> dict[str, int]:
  """"data=2,fsdp=2,model=2" -> {"data": 2, "fsdp": 2, "model": 2}; axes left out are 1.

  ValueError naming the field for unknown or repeated axes, sizes that are not integers
  >= 1, and an empty spec.
  """
  if not isinstance(spec, str):
    raise ValueError(f"{MESH_FIELD} must be a string like 'data=2,fsdp=2,model=2', got "
                     f"{spec!r}")
  sizes = dict.fromkeys(MESH_AXES, 1)
  seen = set()
  items = [item.strip() for item in spec.split(",")] if spec.strip() else []
  if not items:
    raise ValueError(f"{MESH_FIELD} is empty; give axis sizes like 'data=2,fsdp=2,model=2' "
                     f"(axes {', '.join(MESH_AXES)}; left out = 1) or leave it unset (all "
                     "devices on 'data')")
  for item in items:
    name, sep, size = (part.strip() for part in item.partition("="))
    if not sep or name not in MESH_AXES or name in seen:
      problem = f"repeats axis {name!r}" if name in seen else f"has the item {item!r}"
      raise ValueError(f"{MESH_FIELD} {spec!r} {problem}; give 'axis=size' items separated "
                       f"by commas, each of the axes {', '.join(MESH_AXES)} at most once")
    if not size.isdigit() or int(size) < 1:
      raise ValueError(f"{MESH_FIELD} {spec!r}: the size of {name!r} must be an integer >= 1, "
                       f"got {size!r}")
    seen.add(name)
    sizes[name] = int(size)
  return sizes


def make_mesh(spec: str | None = None, *, num_devices: int | None = None) -> Mesh:
  """The (data, fsdp, model) mesh of `spec` over the first `num_devices` devices.

  num_devices: devices used (None: all of them, on every process). spec: see `parse_mesh`;
  None puts every device used on "data" (plain data parallelism). The product of the axis
  sizes must equal the devices used. Model groups are the innermost (neighbouring devices),
  so the column slices of one table talk over the fastest links.
  """
  devices = jax.devices()
  if num_devices is None:
    num_devices = len(devices)
  if not 1 <= num_devices <= len(devices):
    raise ValueError(f"TrainConfig.num_devices must be in [1, {len(devices)}] (the devices "
                     f"JAX sees), got {num_devices}")
  if num_devices < len(devices) and jax.process_count() > 1:
    raise ValueError(f"TrainConfig.num_devices ({num_devices}) must be unset with "
                     f"{jax.process_count()} processes: training uses every process's devices")
  sizes = {DATA_AXIS: num_devices, FSDP_AXIS: 1, MODEL_AXIS: 1} if spec is None else \
      parse_mesh(spec)
  if math.prod(sizes.values()) != num_devices:
    raise ValueError(f"{MESH_FIELD} {spec!r} spans {math.prod(sizes.values())} devices but "
                     f"{num_devices} are used (TrainConfig.num_devices, default all {len(devices)}"
                     "): the product of the axis sizes must equal the devices used")
  shape = tuple(sizes[axis] for axis in MESH_AXES)
  return jax.make_mesh(shape, MESH_AXES, axis_types=(AxisType.Auto,) * len(MESH_AXES),
                       devices=devices[:num_devices])


def mesh_sizes(mesh: Mesh) -> dict[str, int]:
  """{"data": ..., "fsdp": ..., "model": ...} of a mesh made by `make_mesh`."""
  return {axis: int(mesh.shape[axis]) for axis in MESH_AXES}


def batch_devices(mesh) -> int:
  """How many ways the batch is split: data x fsdp."""
  return int(np.prod([mesh.shape[axis] for axis in BATCH_AXES]))


def context_mesh():
  """The mesh of JAX's context (`jax.set_mesh`, `jax.sharding.use_abstract_mesh`) if it is
  a training mesh of more than one device, else None."""
  mesh = jax.sharding.get_abstract_mesh()
  if mesh.empty or not set(MESH_AXES) <= set(mesh.axis_names) or mesh.size == 1:
    return None
  return mesh


def model_parallelism() -> int:
  """The size of the context mesh's "model" axis (1 without a training mesh)."""
  mesh = context_mesh()
  return 1 if mesh is None else int(mesh.shape[MODEL_AXIS])


def split_batch(x: jax.Array) -> jax.Array:
  """x [B, ...] constrained to rows split over data x fsdp on the context mesh (when it
  divides B). Activations between layers are pinned so: left to itself, XLA propagates the
  fsdp split of the weights into the activations' feature axis and then rematerialises
  whole tensors to change layouts."""
  mesh = context_mesh()
  if mesh is None or batch_devices(mesh) == 1 or x.shape[0] % batch_devices(mesh):
    return x
  return jax.lax.with_sharding_constraint(x, PartitionSpec(BATCH_AXES))


def gathered(x: jax.Array) -> jax.Array:
  """x whole on every device of the context mesh (a no-op without one): a parameter the
  fsdp axis shards, gathered before a use XLA would otherwise split awkwardly (a table
  lookup), or a result every process reads (with several processes, an array split over
  devices of other processes cannot be read)."""
  if context_mesh() is None:
    return x
  return jax.lax.with_sharding_constraint(x, PartitionSpec())


# Layouts name the role of each leading dimension of an op's argument or result:
# BATCH (split over data x fsdp), MODEL (split over model) or None (whole on every device).
# Trailing dimensions left out are whole.
BATCH = "batch"
MODEL = "model"
Layout = Sequence[str | None]


def over_mesh(fn: Callable, in_layouts: Sequence[Layout], out_layouts: Sequence[Layout] | Layout,
              *, model_dims: str) -> Callable:
  """`fn` run on the context mesh's slices when there is one, else `fn` itself.

  `fn` must be independent along every MODEL dimension (its slices need no communication)
  and along the batch. The batch is split when data x fsdp divides it (else every device
  takes the whole batch: the same result, e.g. for an evaluation batch of odd size); a MODEL
  dimension the model axis does not divide raises ValueError naming `model_dims` (what the
  dimension is, for the message). `out_layouts` is one layout for a single result.
  """
  def run(*args):
    mesh = context_mesh()
    if mesh is None:
      return fn(*args)
    model = int(mesh.shape[MODEL_AXIS])
    batch_split = batch_devices(mesh)
    batch_sizes = {arg.shape[layout.index(BATCH)] for arg, layout in zip(args, in_layouts)
                   if BATCH in layout}
    batch_is_split = batch_split > 1 and all(size % batch_split == 0 for size in batch_sizes)
    if model == 1 and not batch_is_split:
      return fn(*args)
    for arg, layout in zip(args, in_layouts):
      for dim, role in enumerate(layout):
        if role == MODEL and arg.shape[dim] % model:
          raise ValueError(f"the mesh's model axis ({model}) must divide {model_dims}, got "
                           f"{arg.shape[dim]}; choose another {MESH_FIELD}")

    def spec(layout: Layout) -> PartitionSpec:
      axes = {BATCH: BATCH_AXES if batch_is_split else None,
              MODEL: MODEL_AXIS if model > 1 else None, None: None}
      return PartitionSpec(*(axes[role] for role in layout))

    single = bool(out_layouts) and not isinstance(out_layouts[0], (tuple, list))
    out_specs = spec(out_layouts) if single else tuple(spec(layout) for layout in out_layouts)
    # check_vma=False: the ops hold custom_vjp rules and Pallas calls, whose outputs carry
    # no varying-axes types; the layouts above state how each result is split.
    return jax.shard_map(fn, mesh=mesh, in_specs=tuple(spec(layout) for layout in in_layouts),
                         out_specs=out_specs, check_vma=False)(*args)
  return run
