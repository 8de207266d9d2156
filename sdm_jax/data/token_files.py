"""Writing a pre-tokenised corpus: `train.bin`, `val.bin` and `token_bytes.npy`.

The layout `load_corpus` reads as a pre-split directory (nanoGPT's files, nanochat's
bytes-per-token table): every document is written as BOS followed by its tokens, as
little-endian ids of the smallest dtype that holds the tokenizer's ids. Documents are
keyed (a file's relative path, a dataset row's number) and go to "val" by the hash of
their key (`corpus.split_of`), so the split depends neither on the order in which they
arrive nor on the machine; on a directory of text files with the byte tokenizer the two
files equal `load_corpus`'s streams of that directory.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import os
import pathlib
from typing import Any, Iterable, Iterator

import numpy as np

from sdm_jax.data import token_bytes as token_bytes_lib
from sdm_jax.data.corpus import (SPLIT_FILES, SPLITS, TOKEN_DTYPES, directory_files, read_text,
                                 split_of)
from sdm_jax.data.tokenizer import Tokenizer

TOKEN_BYTES_FILE = "token_bytes.npy"
# Documents handed to the encoding threads at a time.
_BATCH_DOCUMENTS = 512


def token_dtype_for(vocab_size: int) -> str:
  """The smallest of TOKEN_DTYPES that holds ids [0, vocab_size)."""
  for name, dtype in TOKEN_DTYPES.items():
    if vocab_size <= np.iinfo(dtype).max + 1:
      return name
  raise ValueError(f"vocab_size {vocab_size} does not fit any of {sorted(TOKEN_DTYPES)}")


def text_file_documents(paths: Iterable[str | os.PathLike]) -> Iterator[tuple[str, str]]:
  """(key, text) of every text file named or under a named directory, in order.

  A directory gives its regular, non-hidden files (sorted), keyed by their path relative
  to it, as `load_corpus` reads a directory; a file is keyed by its name. Files with a NUL
  byte in their first 8 KiB (binary) are skipped; invalid UTF-8 becomes U+FFFD.
  """
  for path in map(pathlib.Path, paths):
    if path.is_dir():
      files = [(relative, path / relative) for relative in directory_files(path)]
    elif path.is_file():
      files = [(path.name, path)]
    else:
      raise ValueError(f"input {str(path)!r} is neither a file nor a directory")
    for key, file in files:
      data = read_text(file, None, sniff=True)
      if data is not None:
        yield key, data.decode("utf-8", errors="replace")


def write_token_corpus(documents: Iterable[tuple[str, str]], tokenizer: Tokenizer,
                       output_dir: str | os.PathLike, *, val_fraction: float,
                       max_tokens: int | None = None, num_threads: int = 1) -> dict[str, Any]:
  """Tokenises (key, text) documents into `output_dir`/{train.bin, val.bin,
  token_bytes.npy}.

  Args:
    documents: (key, text) pairs; empty texts are dropped.
    tokenizer: encodes the texts and gives the bytes-per-token table.
    output_dir: created if needed; must not hold a train.bin or val.bin already.
    val_fraction: share of documents (by key hash) written to val.bin, in (0, 1).
    max_tokens: stop after the document that brings the total (both splits, BOS
      included) to this many tokens; None: every document.
    num_threads: threads encoding documents in parallel (tiktoken releases the GIL).

  Returns:
    {"documents": {split: n}, "tokens": {split: n}, "token_dtype", "tokenizer",
     "vocab_size", "output_dir"}. The files are written under temporary names and renamed
    at the end, so an interrupted run leaves no corpus that looks complete.

  Raises:
    ValueError: on bad arguments, an output directory that holds a corpus, or a split
      that received no document.
  """
  if not 0.0 < val_fraction < 1.0:
    raise ValueError(f"val_fraction must lie in (0, 1), got {val_fraction}")
  if max_tokens is not None and max_tokens < 1:
    raise ValueError(f"max_tokens must be None or >= 1, got {max_tokens}")
  if num_threads < 1:
    raise ValueError(f"num_threads must be >= 1, got {num_threads}")
  output_dir = pathlib.Path(output_dir)
  finals = {split: output_dir / SPLIT_FILES[split] for split in SPLITS}
  existing = [str(path) for path in finals.values() if path.exists()]
  if existing:
    raise ValueError(f"{existing[0]} already exists: remove it or give another output "
                     f"directory")
  output_dir.mkdir(parents=True, exist_ok=True)
  token_dtype = token_dtype_for(tokenizer.vocab_size)
  counts = {"documents": dict.fromkeys(SPLITS, 0), "tokens": dict.fromkeys(SPLITS, 0)}
  temporary = {split: path.with_name(path.name + ".partial") for split, path in finals.items()}
  try:
    _write_splits(((key, text) for key, text in documents if text), tokenizer, temporary,
                  TOKEN_DTYPES[token_dtype], val_fraction, max_tokens, num_threads, counts)
    empty = [split for split in SPLITS if not counts["documents"][split]]
    if empty:
      raise ValueError(f"split {empty[0]!r} received no document "
                       f"({counts['documents']} documents by split with val_fraction="
                       f"{val_fraction}); give more documents or change val_fraction")
    token_bytes_lib.save_table(output_dir / TOKEN_BYTES_FILE, tokenizer.token_bytes())
  except BaseException:
    for path in temporary.values():
      path.unlink(missing_ok=True)
    raise
  for split in SPLITS:
    os.replace(temporary[split], finals[split])
  return {**counts, "token_dtype": token_dtype, "tokenizer": tokenizer.name,
          "vocab_size": tokenizer.vocab_size, "output_dir": str(output_dir)}


def _write_splits(documents: Iterator[tuple[str, str]], tokenizer: Tokenizer,
                  paths: dict[str, pathlib.Path], dtype: np.dtype, val_fraction: float,
                  max_tokens: int | None, num_threads: int,
                  counts: dict[str, dict[str, int]]) -> None:
  """Appends BOS + tokens of each document to its split's file; counts into `counts`."""
  with concurrent.futures.ThreadPoolExecutor(num_threads) as pool, \
       open(paths["train"], "wb") as train_file, open(paths["val"], "wb") as val_file:
    files = {"train": train_file, "val": val_file}
    total = 0
    while max_tokens is None or total < max_tokens:
      batch = list(itertools.islice(documents, _BATCH_DOCUMENTS))
      if not batch:
        break
      for (key, _), ids in zip(batch, pool.map(tokenizer.encode, [t for _, t in batch])):
        split = split_of(key, val_fraction)
        np.concatenate([[tokenizer.bos_id], ids]).astype(dtype).tofile(files[split])
        counts["documents"][split] += 1
        counts["tokens"][split] += ids.size + 1
        total += ids.size + 1
        if max_tokens is not None and total >= max_tokens:
          break
