"""Tokenises a text corpus once into train.bin, val.bin and token_bytes.npy, for
`experiments.train --data=<output_dir>`.

  python -m experiments.prepare_corpus --input=my_texts/ --output_dir=data/my_texts
  python -m experiments.prepare_corpus --dataset=HuggingFaceFW/fineweb-edu \
      --dataset_config=sample-10BT --output_dir=data/fineweb_edu --max_tokens=1000000000

Inputs: text files and directories of them (`--input`, one document per file), or a
`datasets` dataset streamed from the hub (`--dataset`, one document per row's
`--text_field`). The tokenizer is GPT-2's BPE by default (`--tokenizer`: "byte" or any
tiktoken encoding). The last line printed is a JSON object with the counts and the
`experiments.train` flags that train on the output. See `sdm_jax.data.token_files` for the
format and the split.

A tiktoken encoding needs tiktoken and `--dataset` needs datasets: `pip install -e
".[corpus]"` installs both (text files with `--tokenizer=byte` need neither).
"""

from __future__ import annotations

import json
import os
from typing import Iterator

from absl import flags

from experiments import cli
from sdm_jax.data import token_files
from sdm_jax.data.tokenizer import BYTE_TOKENIZER, tokenizer_named

_INPUT = flags.DEFINE_list("input", None, "Text files and directories of text files (one "
                           "document per file).")
_DATASET = flags.DEFINE_string("dataset", None, "A datasets dataset on the hub, e.g. "
                               "HuggingFaceFW/fineweb-edu (instead of --input).")
_DATASET_CONFIG = flags.DEFINE_string("dataset_config", None, "Its configuration (subset), e.g. "
                                      "sample-10BT.")
_DATASET_SPLIT = flags.DEFINE_string("dataset_split", "train", "Its split to read.")
_TEXT_FIELD = flags.DEFINE_string("text_field", "text", "The column holding each document.")
_OUTPUT_DIR = flags.DEFINE_string("output_dir", None, "Where train.bin, val.bin and "
                                  "token_bytes.npy go (a new directory).", required=True)
_TOKENIZER = flags.DEFINE_string("tokenizer", "gpt2", "'byte' or a tiktoken encoding (gpt2, "
                                 "cl100k_base, o200k_base, ...).")
_VAL_FRACTION = flags.DEFINE_float("val_fraction", 0.005, "Share of documents (by a hash of "
                                   "their key) written to val.bin.")
_MAX_TOKENS = flags.DEFINE_integer("max_tokens", None, "Stop after this many tokens in all "
                                   "(default: the whole corpus).")
_NUM_THREADS = flags.DEFINE_integer("num_threads", os.cpu_count() or 1, "Encoding threads.")


def dataset_documents(name: str, config: str | None, split: str, text_field: str
                      ) -> Iterator[tuple[str, str]]:
  """(row number, text) of a datasets dataset, streamed (nothing is downloaded whole). The
  dataset is opened here, so a missing package or dataset fails before anything is
  written."""
  try:
    import datasets  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise ValueError("--dataset needs the datasets package: pip install -e \".[corpus]\"") from None
  rows = datasets.load_dataset(name, config, split=split, streaming=True)

  def documents():
    for index, row in enumerate(rows):
      if text_field not in row:
        raise ValueError(f"--text_field={text_field!r} is not a column of {name}; its "
                         f"columns: {sorted(row)}")
      yield str(index), row[text_field]
  return documents()


def main(argv):
  del argv
  if (_INPUT.value is None) == (_DATASET.value is None):
    raise ValueError("give either --input (text files or directories) or --dataset")
  tokenizer = tokenizer_named(_TOKENIZER.value)
  if tokenizer is None:
    raise ValueError("--tokenizer must be 'byte' or a tiktoken encoding, not 'none'")
  documents = (token_files.text_file_documents(_INPUT.value) if _INPUT.value else
               dataset_documents(_DATASET.value, _DATASET_CONFIG.value, _DATASET_SPLIT.value,
                                 _TEXT_FIELD.value))
  stats = token_files.write_token_corpus(documents, tokenizer, _OUTPUT_DIR.value,
                                         val_fraction=_VAL_FRACTION.value,
                                         max_tokens=_MAX_TOKENS.value,
                                         num_threads=_NUM_THREADS.value)
  out = _OUTPUT_DIR.value
  train_flags = [f"--data={out}"]
  if tokenizer != BYTE_TOKENIZER:
    train_flags += [f"--config.data.tokenizer={tokenizer.name}",
                    f"--config.data.token_bytes={os.path.join(out, token_files.TOKEN_BYTES_FILE)}"]
  if stats["token_dtype"] != "uint16":
    train_flags.append(f"--config.data.token_dtype={stats['token_dtype']}")
  print(f"wrote {stats['tokens']['train']:,} train and {stats['tokens']['val']:,} val tokens "
        f"({stats['token_dtype']}) of {sum(stats['documents'].values()):,} documents to {out}")
  print(json.dumps({**stats, "train_flags": " ".join(train_flags)}))


if __name__ == "__main__":
  cli.run(main)
