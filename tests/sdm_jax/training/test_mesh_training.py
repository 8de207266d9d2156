"""Training on (data, fsdp, model) meshes of 8 forced host devices gives the one-device
losses; M0, SDM's per-sequence table and GDN's heads are really split; a checkpoint saved on
one mesh restores onto another. The runs happen in `mesh_training_main` subprocesses (the
device count must be set before JAX starts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.subprocess_env import ROOT, TEST_CACHE_DIR, subprocess_pythonpath

ONE, DATA, CUBE, FSDP = "one device", "data=8", "data=2,fsdp=2,model=2", "data=1,fsdp=4,model=2"
MODEL_SPLIT = (CUBE, FSDP)


def run_meshes(config: str) -> dict:
  """`mesh_training_main`'s JSON for one config (one subprocess per config: with
  pytest-xdist a module-scoped fixture would rerun it on every worker)."""
  env = {**os.environ, "PYTHONPATH": subprocess_pythonpath(), "JAX_PLATFORMS": "cpu",
         "JAX_COMPILATION_CACHE_DIR": TEST_CACHE_DIR, "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
         "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0"}
  out = subprocess.run([sys.executable, "-m", "tests.sdm_jax.training.mesh_training_main",
                        config], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
  assert out.returncode == 0, out.stderr[-3000:]
  return json.loads(out.stdout.strip().splitlines()[-1])


def test_sdm_tiny_on_meshes():
  run = run_meshes("sdm_tiny")
  check_losses(run)
  check_fsdp(run)
  check_sdm_split(run)
  check_heads_split(run, attention_only=True)
  check_restore(run)
  # The op's Pallas path (the GPU default; interpreted on CPU) split over (2, 2, 2), 16 of 32
  # value columns per device, against the same op whole: loss value and gradients.
  assert run["pallas_op_relative_error"] < 1e-5


def test_gdn_tiny_on_meshes():
  run = run_meshes("gdn_tiny")  # (2, 2, 2) only: the meshes themselves are sdm_tiny's test
  check_losses(run, meshes=(CUBE,))
  check_fsdp(run)
  check_heads_split(run, attention_only=False)


def check_losses(run, meshes=(DATA, CUBE, FSDP)):
  """Every mesh gives the one-device losses and gradient norms."""
  assert set(run["losses"]) == {ONE, *meshes}
  for mesh in meshes:
    # The first loss and gradient norm see the same initial parameters (created in their
    # shards on each mesh); later ones also each update. Adam divides by sqrt(v), so a
    # reduction-order rounding in a near-zero gradient moves that update by a fraction of
    # the learning rate: hence 1e-4 rather than float32 epsilon.
    assert run["losses"][mesh] == pytest.approx(run["losses"][ONE], rel=1e-4), mesh
    assert run["grad_norms"][mesh] == pytest.approx(run["grad_norms"][ONE], rel=1e-4), mesh
    assert run["losses"][mesh][0] == pytest.approx(run["losses"][ONE][0], rel=1e-6), mesh
  # Training moved: the comparison is not between constants.
  assert run["losses"][ONE][2] != pytest.approx(run["losses"][ONE][0], rel=1e-4)


def check_fsdp(run):
  """Parameters are sharded over fsdp, replicated over data."""
  total, per_device = run["param_bytes"][ONE]
  assert per_device == total
  if DATA in run["param_bytes"]:
    assert run["param_bytes"][DATA] == [total, total]  # data parallel: replicated
  for mesh, fsdp in ((CUBE, 2), (FSDP, 4)):
    if mesh not in run["param_bytes"]:
      continue
    mesh_total, mesh_per_device = run["param_bytes"][mesh]
    assert mesh_total == total
    # Every leaf large enough is split over fsdp (and M0 over model too).
    assert mesh_per_device <= total / fsdp + 1024, mesh


def check_sdm_split(run):
  """M0 and the per-sequence table are split along the value columns (sdm_tiny: H=1,
  N=4096, Dv=128)."""
  # M0 [H, N, Dv] and its two Adam moments, per device: N over fsdp, Dv over model.
  assert run["m0_shards"] == {ONE: ["(1, 4096, 128)"], DATA: ["(1, 4096, 128)"],
                              CUBE: ["(1, 2048, 64)"], FSDP: ["(1, 1024, 64)"]}
  # Inside the op (a shard_map body: per-device shapes) the initial table M0 enters
  # gathered over fsdp but split over model, and each device's per-sequence tables
  # [B / (data x fsdp), H, N, Dv / model] leave it; with model = 2 no body holds a whole
  # [N, Dv] table.
  for mesh, table_in, table_out in ((DATA, [1, 4096, 128], [1, 1, 4096, 128]),
                                    (CUBE, [1, 4096, 64], [2, 1, 4096, 64]),
                                    (FSDP, [1, 4096, 64], [2, 1, 4096, 64])):
    bodies = run["shard_maps"][mesh]
    assert any(body["in"][0] == table_in and table_out in body["out"] for body in bodies), mesh
    if mesh in MODEL_SPLIT:
      assert not any(shape[-2:] == [4096, 128] for body in bodies
                     for shape in body["in"] + body["out"]), mesh


def check_heads_split(run, *, attention_only: bool):
  """GDN's and attention's heads are split over model (4 heads of 32 in both configs; GDN
  K = V = 32); attention_only: the GDN-free sdm_tiny."""
  for mesh, batch, heads in ((DATA, 1, 4), (CUBE, 2, 2), (FSDP, 2, 2)):
    if mesh not in run["shard_maps"]:
      continue
    inputs = [body["in"] for body in run["shard_maps"][mesh]]
    heads_shape = [batch, 32, heads, 32]
    assert [heads_shape] * 3 in inputs, mesh  # attention's q, k, v
    if not attention_only:  # GDN's q, k, v, g, beta
      assert [heads_shape] * 3 + [[batch, 32, heads]] * 2 in inputs, mesh
    if heads == 2:  # no op body holds all four heads
      assert not any(shape[:3] == [batch, 32, 4] for body in inputs for shape in body), mesh


def check_restore(run):
  """The (2, 2, 2) checkpoint restores onto (1, 4, 2) and onto one device."""
  for mesh in (FSDP, ONE):
    restored = run["restore"][mesh]
    assert restored["same_values"] and restored["same_shardings"], mesh
    # The next step from the restored state equals the next step on the saving mesh.
    assert restored["next_loss"] == pytest.approx(run["next_loss_saved_mesh"], rel=1e-4), mesh
