"""Describes a config without training it: parameter counts, decode state, FLOPs per token.

  python -m experiments.describe --config=experiments/configs/swa_tiny.py [--context_len=32768]
  python -m experiments.describe --config=experiments/configs/maglev_tiny.py   # separate and shared
  python -m experiments.describe --config=experiments/configs/sdm_small.py --slot_reuse_sequences=2

Prints one JSON object.
"""

from __future__ import annotations

from absl import flags
import jax
import numpy as np

from experiments import cli
from experiments import common
from maglev_jax import model_kinds
from sdm_jax.evaluation import slot_usage
from sdm_jax.models.lm import LM, init_function
from sdm_jax.training import records

_CONFIG = common.define_config_flag("sdm_tiny")
_CONTEXT_LEN = flags.DEFINE_integer("context_len", None, "Context length for the decode-state "
                                    "and FLOP figures (default: the model's max_seq_len).")
_SLOT_REUSE_SEQUENCES = flags.DEFINE_integer(
    "slot_reuse_sequences", 0, "SDM layers: also measure, on this many sequences of random "
    "tokens (max_seq_len long) at initialisation (seed 0), how often a chunk's writes and "
    "reads pick the same slot (`slot_usage.chunk_reuse`, key \"slot_reuse\"); 0: skip.")
_SLOT_REUSE_CHUNK = flags.DEFINE_integer(
    "slot_reuse_chunk", None, "Chunk length for --slot_reuse_sequences (default: the "
    "model's sdm_chunk_size).")


def main(argv):
  del argv
  config = common.loaded_config(_CONFIG)
  model_config, _, _ = common.lm_configs(config)
  describe = model_kinds.kind_named(config.get("kind", "lm")).describe
  result = {"config": config.name, **describe(model_config, _CONTEXT_LEN.value)}
  if _SLOT_REUSE_SEQUENCES.value > 0:
    model = LM(model_config)
    length = model_config.max_seq_len
    params = init_function(model, length)(jax.random.PRNGKey(0))
    tokens = np.random.default_rng(0).integers(
        0, model_config.vocab_size, (_SLOT_REUSE_SEQUENCES.value, length)).astype(np.int32)
    result["slot_reuse"] = slot_usage.chunk_reuse(
        model, params, tokens, chunk_size=_SLOT_REUSE_CHUNK.value or model_config.sdm_chunk_size,
        batch_size=1)
  print(records.dumps(result))


if __name__ == "__main__":
  cli.run(main)
