"""Samples from a trained workdir.

  python -m experiments.generate --workdir=workdirs/attn_tiny --prompt="def " --num_tokens=200 \
      [--temperature=0.8 --top_k=50 --seed=0]
  python -m experiments.generate --workdir=/tmp/ids_run --prompt_ids=17,4,99   # no tokenizer

Prints the prompt and its continuation as text, decoded with the run's data.tokenizer; a
run on ids without a tokenizer (data.tokenizer="none") takes its prompt as --prompt_ids and
prints ids. Generations longer than one segment (256 tokens) show a progress line on
stderr; the last line on stderr gives the decode speed in tokens/s (prefill and
compilation excluded).
"""

from __future__ import annotations

import sys
import time

from absl import flags
import jax.numpy as jnp

from experiments import cli
from maglev_jax import model_kinds
from sdm_jax.data.tokenizer import prompt_ids, sample_text, tokenizer_named
from sdm_jax.training.config import DataConfig

_WORKDIR = flags.DEFINE_string("workdir", None, "A workdir written by experiments.train.",
                               required=True)
_PROMPT = flags.DEFINE_string("prompt", "", "Text to continue (a BOS token is put first).")
_PROMPT_IDS = flags.DEFINE_list("prompt_ids", None, "Token ids to continue, as they are (no "
                                "BOS added), instead of --prompt; needed without a tokenizer.")
_NUM_TOKENS = flags.DEFINE_integer("num_tokens", 200, "Tokens to generate.")
_TEMPERATURE = flags.DEFINE_float("temperature", 0.8, "Sampling temperature (0: greedy).")
_TOP_K = flags.DEFINE_integer("top_k", None, "Sample among the k most likely tokens.")
_SEED = flags.DEFINE_integer("seed", 0, "Sampling seed.")


def _prompt_ids_flag(vocab_size: int) -> list[int]:
  try:
    ids = [int(token) for token in _PROMPT_IDS.value]
  except ValueError:
    raise ValueError(f"--prompt_ids must be comma-separated integers, got "
                     f"{','.join(_PROMPT_IDS.value)!r}") from None
  if not ids or min(ids) < 0 or max(ids) >= vocab_size:
    raise ValueError(f"--prompt_ids must be one or more ids in [0, {vocab_size}) (the model's "
                     f"vocabulary), got {ids}")
  return ids


def main(argv):
  del argv
  kind = model_kinds.kind_of_workdir(_WORKDIR.value)
  model, params, saved, _ = kind.load(_WORKDIR.value)
  tokenizer = tokenizer_named(DataConfig.from_dict(saved.get("data", {})).tokenizer)
  prompt_text = None
  if _PROMPT_IDS.value is not None:
    if _PROMPT.value:
      raise ValueError("give either --prompt or --prompt_ids, not both")
    prompt = _prompt_ids_flag(model.config.vocab_size)
  elif tokenizer is None:
    raise ValueError("this run's data has no tokenizer (data.tokenizer='none'), so a text "
                     "prompt cannot be encoded: give the prompt as --prompt_ids=ID,ID,...")
  else:
    prompt, prompt_text = prompt_ids(tokenizer, _PROMPT.value), _PROMPT.value
  meter = DecodeSpeed()
  tokens = kind.generate(model, params, jnp.asarray([prompt], jnp.int32),
                         steps=_NUM_TOKENS.value, temperature=_TEMPERATURE.value,
                         top_k=_TOP_K.value, seed=_SEED.value, progress=meter.update)
  print(meter.summary(), file=sys.stderr)
  print(sample_text(tokenizer, prompt, tokens[0].tolist(), prompt_text))


class DecodeSpeed:
  """Progress of `generate` in segments: a progress line per segment, and tokens/s over the
  segments after the first (which includes compiling the decode step)."""

  def __init__(self):
    self._first = None  # (tokens, time) at the end of the first segment

  def update(self, done: int, total: int) -> None:
    now = time.perf_counter()
    if self._first is None:
      self._first = (done, now)
    self._last = (done, total, now)
    if total > done or self._first[0] < done:
      print(f"\rgenerated {done:,d} / {total:,d} tokens{self._rate_text()}", end="",
            file=sys.stderr, flush=True)

  def _rate(self) -> float | None:
    done, _, now = self._last
    first_done, first_time = self._first
    return (done - first_done) / (now - first_time) if done > first_done else None

  def _rate_text(self) -> str:
    rate = self._rate()
    return "" if rate is None else f" ({rate:,.1f} tokens/s)"

  def summary(self) -> str:
    rate = self._rate()
    if rate is None:
      return ("\ndecode speed: not measured (one segment, compilation included; generate "
              "more than 256 tokens to time it)")
    return f"\ndecode speed: {rate:,.1f} tokens/s (batch 1, after the first segment)"


if __name__ == "__main__":
  cli.run(main)
