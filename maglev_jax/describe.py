"""Size accounting of Maglev: parameters under both sharing modes, inference state, FLOPs.

Shapes come from `jax.eval_shape` (nothing is allocated).
"""

from __future__ import annotations

import collections
import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from maglev_jax.config import SHARING, MaglevConfig
from maglev_jax.model import Maglev
from sdm_jax.models import describe as lm_describe

_BLOCK_PARTS = {"mixer": "attention", "mlp": "mlp"}


def _group(path: list[str]) -> str:
  """The accounting group of one parameter, from its path in `Maglev.init`'s tree."""
  network, rest = path[0], path[1:]
  if network == "decoder" and rest[0] == "lm":
    rest = rest[1:]
    if rest[0] in ("embed", "head"):
      return {"embed": "embedding", "head": "head"}[rest[0]]
  if rest[0].startswith("injection_"):
    return "decoder_injection"
  if rest[0].startswith("block_"):
    return f"{network}_{_BLOCK_PARTS.get(rest[1], 'block_norms')}"
  return f"{network}_norms_and_scales"


def parameter_counts(config: MaglevConfig) -> dict[str, int]:
  """{"total", "inference" (what P alone holds), and one count per group}."""
  shapes = jax.eval_shape(lambda: Maglev(config).init(jax.random.PRNGKey(0)))
  counts: dict[str, int] = collections.Counter()
  for path, leaf in jax.tree_util.tree_flatten_with_path(shapes)[0]:
    size = int(np.prod(leaf.shape))
    group = _group([getattr(p, "key", str(p)) for p in path])
    counts[group] += size
    counts["total"] += size
    if not group.startswith("prefiller_"):
      counts["inference"] += size
  return dict(counts)


def inference_state_bytes(config: MaglevConfig, context_len: int) -> dict[str, int]:
  """Bytes per sequence of P's decode state: the (k_bar, v_bar) ring buffers, as for the
  same-size SWA model, plus the memory m_{t-1}."""
  caches = lm_describe.decode_state_bytes(config.decoder_config(), context_len)
  memory = config.d_model * jnp.dtype(config.compute_dtype).itemsize
  return {**caches, "memory": memory, "total": caches["total"] + memory}


def flops_per_token(config: MaglevConfig, context_len: int) -> dict[str, float]:
  """Forward FLOPs per token (2 per multiply-add): P at inference (its SWA body plus the
  injection) and Q (blocks only) on top of it in training."""
  inner = config.num_heads * config.resolved_head_dim
  injection = config.num_layers * 2 * (2 * config.d_model * inner
                                       + 2 * config.d_model * config.num_heads)
  decoder = lm_describe.flops_per_token(config.decoder_config(), context_len)["total"]
  prefiller = lm_describe.flops_per_token(config.prefiller_config(), context_len)
  prefiller_blocks = prefiller["mixers"] + prefiller["mlp"]
  return {"inference": decoder + injection, "injection": float(injection),
          "training_forward": decoder + injection + prefiller_blocks}


def describe(config: MaglevConfig, context_len: int | None = None) -> dict[str, Any]:
  """Everything above, with the parameters of both sharing modes, as a JSON-ready dict."""
  context_len = config.max_seq_len if context_len is None else context_len
  if context_len < 1:
    raise ValueError(f"context_len must be >= 1, got {context_len}")
  return {
      "decoder_pattern": config.layer_kinds,
      "prefiller_pattern": config.prefiller_config().layer_kinds,
      "sharing": config.sharing,
      "context_len": context_len,
      "parameters": {mode: parameter_counts(dataclasses.replace(config, sharing=mode))
                     for mode in SHARING},
      "inference_state_bytes_per_sequence": inference_state_bytes(config, context_len),
      "flops_per_token": flops_per_token(config, context_len),
  }
