"""Evaluates a trained workdir: validation bits per byte.

  python -m experiments.evaluate --workdir=workdirs/attn_tiny [--data=PATH] [--eval_tokens=N]
      [--bucket_width=W]

The last stdout line is a JSON object with `val_bpb`, `tokens` (targets scored) and
`bytes` (their UTF-8 bytes); a Maglev workdir adds `bpb_teacher_forced` (P on Q's memories),
`bpb_recurrent` (P on its own memories, = `val_bpb`) and `bpb_memory_zeroed`. Bytes per
token come from the run's data.token_bytes or data.tokenizer; without either, `val_bpb` is
null, `val_bpb_unavailable` says why and `val_loss` (nats per token) stands in. With a
bucket width (`--bucket_width`, or the run's train.eval_bucket_width), `by_position` holds
the same metrics per position bucket of the evaluation windows: [0, W), [W, 2W), ...
"""

from __future__ import annotations

from absl import flags

from experiments import cli
from maglev_jax import model_kinds
from sdm_jax.data import token_bytes as token_bytes_lib
from sdm_jax.data.corpus import load_corpus
from sdm_jax.training import records
from sdm_jax.training.config import DataConfig
from sdm_jax.training.run_data import bpb_table
from sdm_jax.training.workdir import check_tokens_fit

_WORKDIR = flags.DEFINE_string("workdir", None, "A workdir written by experiments.train.",
                               required=True)
_DATA = flags.DEFINE_string("data", None, "Evaluate on this data's validation split instead "
                            "of the training run's.")
_EVAL_TOKENS = flags.DEFINE_integer("eval_tokens", None, "Score at most this many targets "
                                    "(default: the run's train.eval_tokens; 0: all).")
_STEP = flags.DEFINE_integer("step", None, "Checkpoint step (default: latest).")
_BUCKET_WIDTH = flags.DEFINE_integer("bucket_width", None, "Also report the metrics per "
                                     "position bucket of this width (default: the run's "
                                     "train.eval_bucket_width; 0: none).")


def main(argv):
  del argv
  kind = model_kinds.kind_of_workdir(_WORKDIR.value)
  model, params, saved, step = kind.load(_WORKDIR.value, _STEP.value)
  data = DataConfig.from_dict(saved.get("data", {}))
  path = _DATA.value if _DATA.value is not None else data.path
  val_tokens = load_corpus(path, split="val", val_fraction=data.val_fraction,
                           vocab_size=model.config.vocab_size, token_dtype=data.token_dtype)
  check_tokens_fit(val_tokens, model.config.vocab_size, "the validation data")
  table = bpb_table(data)
  if table is not None:
    token_bytes_lib.check_covers(table, int(val_tokens.max()), "the validation data")
  max_tokens = saved["train"]["eval_tokens"] if _EVAL_TOKENS.value is None else (
      _EVAL_TOKENS.value or None)
  bucket_width = saved["train"].get("eval_bucket_width") if _BUCKET_WIDTH.value is None else (
      _BUCKET_WIDTH.value or None)
  evaluate = kind.evaluator(model, val_tokens, batch_size=saved["train"]["eval_batch_size"],
                            seq_len=saved["train"]["seq_len"], max_tokens=max_tokens,
                            token_bytes=table, bucket_width=bucket_width)
  result = evaluate(params)
  print(records.dumps({"workdir": _WORKDIR.value, "step": step, "data": path or "embedded",
                       "tokens": result.pop("val_tokens"), "bytes": result.pop("val_bytes"),
                       **result}))


if __name__ == "__main__":
  cli.run(main)
