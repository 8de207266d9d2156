"""Small Maglev models with random (never zero) parameters for the tests.

Parameters are drawn with numpy from the shapes of `Maglev.init` (`jax.eval_shape`): jitting
Flax's initialisers costs seconds of CPU compile time per test.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from maglev_jax.config import MaglevConfig
from maglev_jax.model import Maglev

TINY = dict(vocab_size=40, d_model=32, num_layers=2, num_heads=2, window=4, max_seq_len=64)


def tiny_model(**overrides) -> Maglev:
  return Maglev(MaglevConfig(**{**TINY, **overrides}))


def random_params(model: Maglev, seed: int = 0, *, fresh_gates: bool = False):
  """Random parameters of `model`: kernels ~ N(0, 1/fan_in), embeddings ~ N(0, 1), norm
  and residual scales near 1, gate kernels and embedding scales near 0.

  fresh_gates: set the gate kernels and embedding scales to 0 and the residual scales to
  1, as at initialisation (both gates exactly 1).
  """
  rng = np.random.default_rng(seed)
  shapes = jax.eval_shape(model.init, jax.random.PRNGKey(0))

  def draw(path, leaf):
    names = [getattr(p, "key", str(p)) for p in path]
    noise = rng.standard_normal(leaf.shape).astype(np.float32)
    if names[-1] in ("scale", "residual_scale"):
      value = 1.0 + (0.0 if fresh_gates and names[-1] == "residual_scale" else 0.1) * noise
    elif names[-1] == "embedding_scale" or names[-2].endswith("_gate"):
      value = 0.0 * noise if fresh_gates else 0.3 * noise
    elif names[-1] == "embedding":
      value = noise
    else:
      value = noise / np.sqrt(leaf.shape[0])
    return jnp.asarray(value, leaf.dtype)
  return jax.tree_util.tree_map_with_path(draw, shapes)


def random_tokens(model: Maglev, batch: int, length: int, seed: int = 2) -> jax.Array:
  rng = np.random.default_rng(seed)
  return jnp.asarray(rng.integers(0, model.config.vocab_size, (batch, length)), jnp.int32)
