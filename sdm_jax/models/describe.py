"""Size accounting of an `LM`: parameters by kind, decode state per sequence, FLOPs/token.

Shapes come from `jax.eval_shape` (nothing is allocated), so this works for any config.
"""

from __future__ import annotations

import collections
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sdm_jax.layers.sparse_delta_memory import INITIAL_MEMORY_NAME
from sdm_jax.models.config import LMConfig
from sdm_jax.models.lm import LM
from sdm_jax.models.mixers import MIXERS


def parameter_shapes(config: LMConfig) -> Any:
  model = LM(config)
  return jax.eval_shape(model.init, jax.random.PRNGKey(0), jnp.zeros((1, 1), jnp.int32))


def parameter_counts(config: LMConfig) -> dict[str, int]:
  """Parameter counts by kind.

  {"total", "non_memory", "memory_m0", "embedding", "head", "mlp", "norms",
  "mixer_<letter>"...}: "memory_m0" is the SDM initial tables M0 (memory content, not
  counted in "mixer_M"); "non_memory" = total - memory_m0, the figure isoFLOP comparisons
  match. The parts other than "total" and "non_memory" sum to "total".
  """
  counts: dict[str, int] = collections.Counter(total=0, memory_m0=0)
  kinds = config.layer_kinds
  for path, leaf in jax.tree_util.tree_flatten_with_path(parameter_shapes(config))[0]:
    names = [getattr(p, "key", str(p)) for p in path][1:]  # drop the "params" collection
    size = int(np.prod(leaf.shape))
    counts["total"] += size
    if names[-1] == INITIAL_MEMORY_NAME:
      counts["memory_m0"] += size
    elif names[0].startswith("block_"):
      part = names[1]
      if part == "mixer":
        counts[f"mixer_{kinds[int(names[0].split('_')[1])]}"] += size
      elif part == "mlp":
        counts["mlp"] += size
      else:
        counts["norms"] += size
    elif names[0] == "embed":
      counts["embedding"] += size
    elif names[0] == "head":
      counts["head"] += size
    else:
      counts["norms"] += size
  counts["non_memory"] = counts["total"] - counts["memory_m0"]
  return dict(counts)


def decode_state_bytes(config: LMConfig, context_len: int) -> dict[str, int]:
  """Bytes of the decode caches per sequence at a context of `context_len` tokens.

  Returns {"total": ..., "layer_<i>_<letter>": ...}; read off the cache shapes that
  `LM.prefill` builds for a cache length of `context_len`.
  """
  model = LM(config)
  tokens = jnp.zeros((1, 1), jnp.int32)
  params = parameter_shapes(config)
  _, caches = jax.eval_shape(lambda p: model.apply(p, tokens, context_len, method=LM.prefill),
                             params)
  result = {"total": 0}
  for i, (kind, cache) in enumerate(zip(config.layer_kinds, caches)):
    size = sum(int(np.prod(x.shape)) * jnp.dtype(x.dtype).itemsize for x in jax.tree.leaves(cache))
    result[f"layer_{i}_{kind}"] = size
    result["total"] += size
  return result


def flops_per_token(config: LMConfig, context_len: int) -> dict[str, float]:
  """Forward FLOPs per token (2 per multiply-add), averaged over a context of context_len:
  {"total", "mixers", "mlp", "head", "mixer_<letter>" (one layer of that kind)...};
  training costs about three times the forward."""
  per_kind = {f"mixer_{k}": float(MIXERS[k].flops_per_token(config, context_len))
              for k in sorted(set(config.layer_kinds))}
  mixers = sum(per_kind[f"mixer_{k}"] for k in config.layer_kinds)
  matrices = 3 if config.mlp_activation == "swiglu" else 2
  mlp = config.num_layers * 2 * matrices * config.d_model * config.mlp_hidden_dim
  head = 2 * config.d_model * config.vocab_size
  return {"total": float(mixers + mlp + head), "mixers": float(mixers), "mlp": float(mlp),
          "head": float(head), **per_kind}


def describe(config: LMConfig, context_len: int | None = None) -> dict[str, Any]:
  """Everything above in one JSON-ready dict."""
  context_len = config.max_seq_len if context_len is None else context_len
  if context_len < 1:
    raise ValueError(f"context_len must be >= 1, got {context_len}")
  return {
      "pattern": config.layer_kinds,
      "context_len": context_len,
      "parameters": parameter_counts(config),
      "decode_state_bytes_per_sequence": decode_state_bytes(config, context_len),
      "flops_per_token": flops_per_token(config, context_len),
  }
