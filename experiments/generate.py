"""Samples text from a trained workdir.

  python -m experiments.generate --workdir=workdirs/attn_tiny --prompt="def " --num_tokens=200 \
      [--temperature=0.8 --top_k=50 --seed=0]
"""

from __future__ import annotations

from absl import flags
import jax.numpy as jnp

from experiments import cli
from experiments import model_kinds
from sdm_jax.data.tokenizer import BOS_ID, decode, encode

_WORKDIR = flags.DEFINE_string("workdir", None, "A workdir written by experiments.train.",
                               required=True)
_PROMPT = flags.DEFINE_string("prompt", "", "Text to continue (a BOS token is put first).")
_NUM_TOKENS = flags.DEFINE_integer("num_tokens", 200, "Tokens to generate.")
_TEMPERATURE = flags.DEFINE_float("temperature", 0.8, "Sampling temperature (0: greedy).")
_TOP_K = flags.DEFINE_integer("top_k", None, "Sample among the k most likely tokens.")
_SEED = flags.DEFINE_integer("seed", 0, "Sampling seed.")


def main(argv):
  del argv
  kind = model_kinds.kind_of_workdir(_WORKDIR.value)
  model, params, _, _ = kind.load(_WORKDIR.value)
  prompt = jnp.asarray([[BOS_ID, *encode(_PROMPT.value).tolist()]], jnp.int32)
  tokens = kind.generate(model, params, prompt, steps=_NUM_TOKENS.value,
                         temperature=_TEMPERATURE.value, top_k=_TOP_K.value, seed=_SEED.value)
  print(_PROMPT.value + decode(tokens[0]))


if __name__ == "__main__":
  cli.run(main)
