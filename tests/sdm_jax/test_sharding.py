"""The mesh spec, the mesh, the state sharding rule and `over_mesh` without a mesh (one
device here; the 8-device runs are in tests/sdm_jax/training/test_mesh_training.py)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AbstractMesh, AxisType, PartitionSpec

from sdm_jax import sharding
from sdm_jax.training.config import TrainConfig
from sdm_jax.training.train_step import state_shardings


def test_parse_mesh_fills_left_out_axes_with_one():
  assert sharding.parse_mesh("data=2,fsdp=2,model=2") == {"data": 2, "fsdp": 2, "model": 2}
  assert sharding.parse_mesh(" model=4 , data=2") == {"data": 2, "fsdp": 1, "model": 4}
  assert sharding.parse_mesh("fsdp=8") == {"data": 1, "fsdp": 8, "model": 1}


@pytest.mark.parametrize("spec, message", [
    ("", "is empty"),
    ("data=2,tensor=2", "'tensor=2'"),
    ("data=2,data=2", "repeats axis 'data'"),
    ("data=0", "integer >= 1"),
    ("data=two", "integer >= 1"),
    ("data", "'data'"),
    (8, "must be a string"),
])
def test_parse_mesh_names_the_field_and_the_problem(spec, message):
  with pytest.raises(ValueError, match="TrainConfig.mesh") as error:
    sharding.parse_mesh(spec)
  assert message in str(error.value)


def test_mesh_product_must_equal_the_devices_used():
  devices = jax.device_count()
  mesh = sharding.make_mesh(f"model={devices}")
  assert sharding.mesh_sizes(mesh) == {"data": 1, "fsdp": 1, "model": devices}
  assert sharding.mesh_sizes(sharding.make_mesh()) == {"data": devices, "fsdp": 1, "model": 1}
  with pytest.raises(ValueError, match=r"TrainConfig.mesh .* spans 2 devices but 1 are used"):
    sharding.make_mesh("data=2", num_devices=1)
  with pytest.raises(ValueError, match="TrainConfig.num_devices"):
    sharding.make_mesh(num_devices=devices + 1)


def test_train_config_checks_the_mesh_and_the_batch_split():
  assert TrainConfig(mesh="data=2,fsdp=2,model=2", batch_size=8).mesh == "data=2,fsdp=2,model=2"
  with pytest.raises(ValueError, match="TrainConfig.mesh"):
    TrainConfig(mesh="pipeline=2")
  with pytest.raises(ValueError, match=r"batch_size \(6\) .* data x fsdp = 4"):
    TrainConfig(mesh="data=2,fsdp=2,model=2", batch_size=6)


def test_state_shardings_zero3_rule():
  mesh = AbstractMesh((2, 2, 2), sharding.MESH_AXES, axis_types=(AxisType.Auto,) * 3)
  leaf = lambda *shape: jax.ShapeDtypeStruct(shape, jnp.float32)  # noqa: E731
  tree = {"mixer": {"M0": leaf(1, 4096, 128), "kernel": leaf(128, 259), "bias": leaf(259)},
          "embed": {"embedding": leaf(259, 96)}, "count": leaf()}
  specs = jax.tree.map(lambda s: s.spec, state_shardings(tree, mesh))
  assert specs == {
      # M0: Dv over model, then the largest dimension fsdp divides (N) over fsdp.
      "mixer": {"M0": PartitionSpec(None, "fsdp", "model"),
                "kernel": PartitionSpec("fsdp", None),   # 259 is odd: the other one
                "bias": PartitionSpec(None)},            # nothing divides: whole
      "embed": {"embedding": PartitionSpec(None, "fsdp")},
      "count": PartitionSpec()}


def test_over_mesh_without_a_mesh_calls_the_function():
  x = jnp.asarray(np.random.default_rng(0).normal(size=(3, 5)), jnp.float32)
  split = sharding.over_mesh(lambda a: a * 2, in_layouts=[(sharding.BATCH,)],
                             out_layouts=(sharding.BATCH,), model_dims="test columns")
  np.testing.assert_array_equal(split(x), x * 2)
  assert sharding.model_parallelism() == 1
  assert sharding.split_batch(x) is x and sharding.gathered(x) is x
