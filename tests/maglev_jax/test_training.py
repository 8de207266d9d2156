"""The lifted two-pass loss: its terms, where its gradients go, and the sharded step."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np

from maglev_jax.model import shift_memories
from maglev_jax.training import maglev_loss_fn, memory_distance
from tests.subprocess_env import subprocess_pythonpath
from tests.maglev_jax.helpers import random_params, random_tokens, tiny_model

# One decoder layer and one full-attention prefiller layer: enough for every path here.
ONE_LAYER = dict(num_layers=1, prefiller_pattern="A")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _norm(tree) -> float:
  return float(sum(jnp.sum(jnp.square(x)) for x in jax.tree.leaves(tree)))


def test_memory_distance_is_the_scaled_l2_norm_with_a_finite_gradient_at_zero():
  rng = np.random.default_rng(0)
  m, target = rng.standard_normal((2, 3, 16)), rng.standard_normal((2, 3, 16))
  np.testing.assert_allclose(memory_distance(jnp.asarray(m), jnp.asarray(target)),
                             np.linalg.norm(m - target, axis=-1) / 4.0, rtol=1e-5)
  same = jnp.asarray(m, jnp.float32)
  grad = jax.grad(lambda x: jnp.sum(memory_distance(x, same)))(same)
  np.testing.assert_array_equal(grad, 0.0)


def test_loss_is_ce_plus_weighted_memory_and_prefiller_terms():
  model = tiny_model(memory_loss_weight=0.3, prefiller_ce_weight=0.5, **ONE_LAYER)
  loss, metrics = jax.jit(maglev_loss_fn(model))(random_params(model),
                                                 random_tokens(model, 2, 9))
  assert min(float(metrics[k]) for k in ("ce", "memory_loss", "prefiller_ce")) > 0
  np.testing.assert_allclose(
      loss, metrics["ce"] + 0.3 * metrics["memory_loss"] + 0.5 * metrics["prefiller_ce"],
      rtol=1e-6)


def test_gradients_reach_q_through_the_injected_targets():
  ce_only = tiny_model(memory_loss_weight=0.0, **ONE_LAYER)
  stopped = tiny_model(memory_loss_weight=1.0, stop_gradient_target=True, **ONE_LAYER)
  pulled = tiny_model(memory_loss_weight=1.0, **ONE_LAYER)
  params = random_params(ce_only)
  inputs = random_tokens(ce_only, 2, 10)

  @jax.jit
  def prefiller_grads(params, tokens):
    grad = lambda model: jax.grad(  # noqa: E731
        lambda p: maglev_loss_fn(model)(p, tokens)[0])(params)["prefiller"]
    # The memory loss's direct pull on Q: m held fixed, m' = Q(x) free.
    targets = ce_only.target_memories(params, tokens[:, :-1])
    memories = jax.lax.stop_gradient(ce_only.decoder_hidden(
        params, tokens[:, :-1], shift_memories(targets)))
    direct = jax.grad(lambda p: jnp.mean(memory_distance(
        memories, ce_only.target_memories(p, tokens[:, :-1]))))(params)["prefiller"]
    return grad(ce_only), grad(stopped), grad(pulled), direct
  from_ce, from_stopped, from_pulled, direct = prefiller_grads(params, inputs)
  # With lambda = 0, Q is trained only through P's CE on the memories it injects.
  assert _norm({k: v for k, v in from_ce.items() if k.startswith("block_")}) > 1e-8
  # The stop-gradient removes exactly the direct pull of the memory loss on Q (Q still
  # gets the memory loss through the memories it injects into P).
  assert _norm(direct) > 1e-8
  jax.tree.map(lambda a, b, c: np.testing.assert_allclose(a - b, c, rtol=1e-4, atol=1e-6),
               from_pulled, from_stopped, direct)


_SHARDED_STEP = textwrap.dedent("""
    import jax, numpy as np, optax
    from maglev_jax.training import maglev_loss_fn
    from sdm_jax.sharding import make_mesh
    from sdm_jax.training.train_step import (TrainState, make_train_step, replicated,
                                             shard_batch)
    from tests.maglev_jax.helpers import random_params, tiny_model
    assert jax.device_count() == 4, jax.devices()
    model = tiny_model(num_layers=1, prefiller_pattern="A", sharing="shared",
                       prefiller_ce_weight=0.1)
    params = jax.device_get(random_params(model))  # host copies: the step donates its input
    # Plain SGD: the update is the gradient itself (Adam's first step is ~lr * sign(g),
    # which turns rounding in near-zero gradients into lr-sized differences).
    optimizer = optax.sgd(0.1)
    batch = np.random.default_rng(0).integers(0, 40, (8, 13)).astype(np.int32)
    results = []
    for devices in (1, 4):
      mesh = make_mesh(num_devices=devices)
      state = jax.device_put(TrainState.create(params, optimizer), replicated(mesh))
      step = make_train_step(maglev_loss_fn(model), optimizer, mesh, replicated(mesh))
      state, metrics = step(state, shard_batch(batch, mesh))
      results.append((jax.device_get(state.params), jax.device_get(metrics)))
    (params_1, metrics_1), (params_4, metrics_4) = results
    for name in ("loss", "ce", "memory_loss", "prefiller_ce", "grad_norm"):
      np.testing.assert_allclose(metrics_4[name], metrics_1[name], rtol=1e-5)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6),
                 params_4, params_1)
    moved = max(float(np.max(np.abs(a - b))) for a, b in
                zip(jax.tree.leaves(params_1), jax.tree.leaves(params)))
    assert moved > 1e-3, moved
    print("same step on 1 and 4 devices")
""")


def test_train_step_on_four_host_devices_equals_one_device():
  # Four CPU devices, and cheap XLA optimisation (the compile dominates this test).
  env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": subprocess_pythonpath(),
         "XLA_FLAGS": "--xla_force_host_platform_device_count=4 "
                      "--xla_llvm_disable_expensive_passes=true --xla_backend_optimization_level=0"}
  result = subprocess.run([sys.executable, "-c", _SHARDED_STEP], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
  assert result.returncode == 0, result.stderr[-3000:]
  assert "same step on 1 and 4 devices" in result.stdout
