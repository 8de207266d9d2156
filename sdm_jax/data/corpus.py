"""Token streams for language-model training and evaluation.

A corpus is one 1-D stream of token ids in which every document is `BOS_ID` followed by
its UTF-8 bytes (byte tokenizer). Sources:

- `path=None`: the Python standard library's own `.py` files, present wherever Python
  is (its content depends on the Python version, so record it with results);
- a text file: one document, split by bytes (the last `val_fraction` is validation);
- a directory: every regular, non-hidden, non-binary file under it, one document each,
  assigned to train or validation by a hash of its relative path (`split_of`);
- pre-tokenised ids: a `.npy` file holding a 1-D uint16/uint32 array, or a raw
  little-endian `.u16.bin` / `.u32.bin` file, split by tokens (the last `val_fraction`
  is validation);
- a pre-split directory (nanoGPT's layout): a directory holding `train.bin` and
  `val.bin`, raw little-endian ids of `token_dtype` (uint16 by default), used as the
  two splits as they are (`val_fraction` does not apply).

Token files are memory-mapped, so corpora larger than RAM work.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import sysconfig
from typing import Iterable, Literal

import numpy as np

from sdm_jax.data.tokenizer import BOS_ID, VOCAB_SIZE

Split = Literal["train", "val"]
SPLITS = ("train", "val")

# Directories holding installed third-party packages, not the standard library.
_THIRD_PARTY_DIRS = frozenset({"site-packages", "dist-packages"})
# A NUL byte this early marks a file as binary (the heuristic `grep` and git use).
_BINARY_SNIFF_BYTES = 8192
# Raw token files hold little-endian ids of one of these dtypes.
TOKEN_DTYPES = {"uint16": np.dtype("<u2"), "uint32": np.dtype("<u4")}
_RAW_TOKEN_SUFFIXES = {".u16.bin": TOKEN_DTYPES["uint16"], ".u32.bin": TOKEN_DTYPES["uint32"]}
_NPY_DTYPES = (np.dtype(np.uint16), np.dtype(np.uint32))
# The files of a pre-split directory, by split (nanoGPT's names).
SPLIT_FILES = {"train": "train.bin", "val": "val.bin"}


def stdlib_root() -> pathlib.Path:
  """Directory of the running interpreter's standard library."""
  return pathlib.Path(sysconfig.get_paths()["stdlib"])


def stdlib_source_files() -> list[pathlib.Path]:
  """The `.py` files of the standard library, sorted by relative path.

  Anything under a `site-packages` or `dist-packages` directory is left out. Symlinked
  directories are not followed, so the list is the same on every call.
  """
  root = stdlib_root()
  if not root.is_dir():
    raise ValueError(f"standard library directory {root} does not exist")
  relative_paths = []
  for directory, subdirs, filenames in os.walk(root):
    subdirs[:] = [name for name in subdirs if name not in _THIRD_PARTY_DIRS]
    for name in filenames:
      if name.endswith(".py"):
        relative_paths.append(
            pathlib.Path(directory, name).relative_to(root).as_posix())
  return [root / relative for relative in sorted(relative_paths)]


def split_of(relative_path: str, val_fraction: float) -> Split:
  """"train" or "val" for a file, from the SHA-256 of its POSIX path relative to its root.

  The first 8 digest bytes, read as a fraction u in [0, 1), give "val" iff
  u < val_fraction. The answer depends only on the path, not on the machine, the file
  order or PYTHONHASHSEED; raising `val_fraction` only moves files from train to val.
  """
  _check_val_fraction(val_fraction)
  if not isinstance(relative_path, str) or not relative_path:
    raise ValueError(f"relative_path must be a non-empty str, got {relative_path!r}")
  if relative_path.startswith("/"):
    raise ValueError(
        f"relative_path must be relative to the corpus root, got {relative_path!r}")
  digest = hashlib.sha256(relative_path.encode("utf-8")).digest()
  unit = int.from_bytes(digest[:8], "big") / 2.0**64
  return "val" if unit < val_fraction else "train"


def load_corpus(path: str | os.PathLike | None = None,
                *,
                split: str,
                val_fraction: float = 0.05,
                max_bytes: int | None = None,
                vocab_size: int | None = VOCAB_SIZE,
                token_dtype: str = "uint16") -> np.ndarray:
  """One split of a corpus as a 1-D token stream [n].

  Text sources give uint16 ids with each document as `BOS_ID` + bytes; empty documents
  are dropped. Pre-tokenised sources give their stored dtype (uint16/uint32), as a
  read-only memory-mapped view.

  Args:
    path: None for the standard library, else a text file, a directory of text files, a
      pre-split directory (`train.bin`, `val.bin`), a `.npy` file or a `.u16.bin` /
      `.u32.bin` file (see the module docstring).
    split: "train" or "val".
    val_fraction: share of the corpus in "val", in (0, 1) (unused by a pre-split
      directory).
    max_bytes: if given, deliberately truncates the split for quick runs: text sources
      keep only the first `max_bytes` content bytes of the split (in file order; BOS
      tokens not counted), pre-tokenised sources the first `max_bytes // itemsize`
      tokens. None reads the whole split.
    vocab_size: model vocabulary; every id must be < vocab_size (text needs
      vocab_size >= VOCAB_SIZE). None skips the check (the caller checks the ids).
    token_dtype: dtype of the ids in a pre-split directory's files, one of TOKEN_DTYPES.

  Raises:
    ValueError: on a missing path, an unusable or empty source, an empty split, ids
      outside the vocabulary, or an invalid argument.
  """
  if split not in SPLITS:
    raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
  _check_val_fraction(val_fraction)
  if max_bytes is not None and (isinstance(max_bytes, bool) or
                                not isinstance(max_bytes, (int, np.integer)) or
                                max_bytes < 1):
    raise ValueError(f"max_bytes must be None or an int >= 1, got {max_bytes!r}")
  if vocab_size is not None and vocab_size < 1:
    raise ValueError(f"vocab_size must be None or >= 1, got {vocab_size}")
  if token_dtype not in TOKEN_DTYPES:
    raise ValueError(f"token_dtype must be one of {sorted(TOKEN_DTYPES)}, got {token_dtype!r}")

  if path is None:
    return _load_stdlib(split, val_fraction, max_bytes, vocab_size)
  path = pathlib.Path(path)
  if not path.exists():
    raise ValueError(f"corpus path {str(path)!r} does not exist")
  if is_split_directory(path):
    return _load_split_file(path, split, max_bytes, vocab_size, TOKEN_DTYPES[token_dtype])
  if path.is_dir():
    return _load_directory(path, split, val_fraction, max_bytes, vocab_size)
  if not path.is_file():
    raise ValueError(f"corpus path {str(path)!r} is neither a regular file nor a directory")
  if path.suffix in (".npy", ".bin"):
    return _load_token_file(path, split, val_fraction, max_bytes, vocab_size)
  return _load_text_file(path, split, val_fraction, max_bytes, vocab_size)


def _check_val_fraction(val_fraction: float) -> None:
  if not 0.0 < val_fraction < 1.0:
    raise ValueError(f"val_fraction must lie in (0, 1), got {val_fraction}")


def holds_token_ids(path: str | os.PathLike | None) -> bool:
  """Whether `load_corpus(path)` reads pre-tokenised ids (a `.npy` / `.bin` file or a
  pre-split directory) rather than text it tokenises into bytes."""
  if path is None:
    return False
  path = pathlib.Path(path)
  return is_split_directory(path) or (path.is_file() and path.suffix in (".npy", ".bin"))


def is_split_directory(path: pathlib.Path) -> bool:
  """Whether `path` is a pre-split directory: one holding `train.bin` or `val.bin` (a
  directory with only one of them is an error when loaded)."""
  return path.is_dir() and any((path / name).is_file() for name in SPLIT_FILES.values())


def _check_text_vocab(vocab_size: int | None) -> None:
  if vocab_size is not None and vocab_size < VOCAB_SIZE:
    raise ValueError(
        f"vocab_size must be >= {VOCAB_SIZE} (256 bytes + BOS/EOS/PAD) for text corpora, "
        f"got {vocab_size}")


def read_text(path: pathlib.Path, limit: int | None, *, sniff: bool) -> bytes | None:
  """Up to `limit` bytes of `path`; None if `sniff` and a NUL shows in its first 8 KiB."""
  with open(path, "rb") as f:
    head = f.read(_BINARY_SNIFF_BYTES)
    if sniff and b"\0" in head:
      return None
    if limit is not None and len(head) >= limit:
      return head[:limit]
    rest = f.read() if limit is None else f.read(limit - len(head))
  return head + rest


def _documents_to_stream(documents: Iterable[bytes]) -> np.ndarray:
  """uint16 stream of BOS + bytes per non-empty document."""
  documents = [doc for doc in documents if doc]
  stream = np.empty(sum(len(doc) + 1 for doc in documents), dtype=np.uint16)
  position = 0
  for doc in documents:
    stream[position] = BOS_ID
    stream[position + 1:position + 1 + len(doc)] = np.frombuffer(doc, dtype=np.uint8)
    position += len(doc) + 1
  return stream


def _read_documents(files: list[pathlib.Path], max_bytes: int | None,
                    *, sniff: bool) -> list[bytes]:
  """Contents of `files` in order, stopping once `max_bytes` content bytes are read."""
  documents = []
  remaining = max_bytes
  for file in files:
    if remaining is not None and remaining <= 0:
      break
    data = read_text(file, remaining, sniff=sniff)
    if data:
      documents.append(data)
      if remaining is not None:
        remaining -= len(data)
  return documents


def _load_stdlib(split: Split, val_fraction: float, max_bytes: int | None,
                 vocab_size: int) -> np.ndarray:
  _check_text_vocab(vocab_size)
  root = stdlib_root()
  files = [file for file in stdlib_source_files()
           if split_of(file.relative_to(root).as_posix(), val_fraction) == split]
  if not files:
    raise ValueError(
        f"the standard library at {root} has no .py files in split {split!r} "
        f"with val_fraction={val_fraction}")
  # Standard-library sources are text by construction, so no binary sniffing.
  stream = _documents_to_stream(_read_documents(files, max_bytes, sniff=False))
  if stream.size == 0:
    raise ValueError(f"the {split!r} split of the standard library at {root} is empty")
  return stream


def directory_files(root: pathlib.Path) -> list[str]:
  """POSIX relative paths of the regular, non-hidden files under `root`, sorted."""
  relative_paths = []
  for directory, subdirs, filenames in os.walk(root):
    subdirs[:] = [name for name in subdirs if not name.startswith(".")]
    for name in filenames:
      full = pathlib.Path(directory, name)
      if name.startswith(".") or not full.is_file():
        continue
      relative_paths.append(full.relative_to(root).as_posix())
  return sorted(relative_paths)


def _load_directory(root: pathlib.Path, split: Split, val_fraction: float,
                    max_bytes: int | None, vocab_size: int) -> np.ndarray:
  _check_text_vocab(vocab_size)
  relative_paths = directory_files(root)
  chosen = [root / rel for rel in relative_paths
            if split_of(rel, val_fraction) == split]
  stream = _documents_to_stream(_read_documents(chosen, max_bytes, sniff=True))
  if stream.size:
    return stream
  # Tell apart "nothing usable at all" from "nothing usable on this side of the split".
  others = [root / rel for rel in relative_paths
            if split_of(rel, val_fraction) != split]
  if not _read_documents(others, 1, sniff=True):
    raise ValueError(
        f"directory {str(root)!r} has no usable files (non-hidden, non-empty, without a "
        f"NUL byte in the first {_BINARY_SNIFF_BYTES} bytes)")
  raise ValueError(
      f"split {split!r} of directory {str(root)!r} is empty: with "
      f"val_fraction={val_fraction} the path hash sends none of the usable files among "
      f"its {len(relative_paths)} files there; add files, change val_fraction, or pass "
      f"a single text file (split by bytes) instead")


def _split_bounds(total: int, split: Split, val_fraction: float,
                  unit: str, path: pathlib.Path) -> tuple[int, int]:
  """[start, stop) of `split` when the last `val_fraction` of `total` units is val."""
  val_count = int(total * val_fraction)
  train_count = total - val_count
  start, stop = (0, train_count) if split == "train" else (train_count, total)
  if stop == start:
    raise ValueError(
        f"split {split!r} of {str(path)!r} is empty: {total} {unit} with "
        f"val_fraction={val_fraction} give {train_count} train and {val_count} val {unit}")
  return start, stop


def _load_text_file(path: pathlib.Path, split: Split, val_fraction: float,
                    max_bytes: int | None, vocab_size: int) -> np.ndarray:
  _check_text_vocab(vocab_size)
  size = path.stat().st_size
  if size == 0:
    raise ValueError(f"text file {str(path)!r} is empty")
  with open(path, "rb") as f:
    if b"\0" in f.read(_BINARY_SNIFF_BYTES):
      raise ValueError(
          f"file {str(path)!r} looks binary (a NUL byte in its first "
          f"{_BINARY_SNIFF_BYTES} bytes); pre-tokenised ids must be a .npy, .u16.bin or "
          f".u32.bin file, or train.bin and val.bin in one directory")
    start, stop = _split_bounds(size, split, val_fraction, "bytes", path)
    if max_bytes is not None:
      stop = min(stop, start + max_bytes)
    f.seek(start)
    data = f.read(stop - start)
  # The split's part of the file is one document of its own, so it starts with BOS.
  return _documents_to_stream([data])


def _open_token_file(path: pathlib.Path) -> np.ndarray:
  """Memory-mapped 1-D ids of a `.npy` or `.u16.bin` / `.u32.bin` file."""
  if path.suffix == ".npy":
    try:
      tokens = np.load(path, mmap_mode="r", allow_pickle=False)
    except ValueError as error:
      raise ValueError(f"cannot read {str(path)!r} as a .npy array: {error}") from error
    if tokens.ndim != 1 or tokens.dtype not in _NPY_DTYPES:
      raise ValueError(
          f".npy corpus {str(path)!r} must hold a 1-D uint16 or uint32 array, got shape "
          f"{tokens.shape} and dtype {tokens.dtype}")
    return tokens
  raw_suffix = "".join(path.suffixes[-2:])
  if raw_suffix not in _RAW_TOKEN_SUFFIXES:
    raise ValueError(
        f"raw token file {str(path)!r} must end in one of "
        f"{sorted(_RAW_TOKEN_SUFFIXES)} to give its dtype; for nanoGPT's train.bin and "
        f"val.bin, give their directory (its data.token_dtype is uint16 unless set)")
  return _open_raw(path, _RAW_TOKEN_SUFFIXES[raw_suffix])


def _open_raw(path: pathlib.Path, dtype: np.dtype) -> np.ndarray:
  """Memory-mapped 1-D ids of a raw little-endian file of `dtype`."""
  size = path.stat().st_size
  if size % dtype.itemsize:
    raise ValueError(
        f"raw token file {str(path)!r} has {size} bytes, not a multiple of "
        f"{dtype.itemsize} ({dtype.name} ids)")
  if size == 0:
    return np.zeros(0, dtype=dtype)
  return np.memmap(path, dtype=dtype, mode="r")


def _load_token_file(path: pathlib.Path, split: Split, val_fraction: float,
                     max_bytes: int | None, vocab_size: int | None) -> np.ndarray:
  tokens = _open_token_file(path)
  if tokens.size == 0:
    raise ValueError(f"token file {str(path)!r} is empty")
  start, stop = _split_bounds(tokens.size, split, val_fraction, "tokens", path)
  return _checked_tokens(tokens, start, stop, max_bytes, vocab_size, split, path)


def _load_split_file(root: pathlib.Path, split: Split, max_bytes: int | None,
                     vocab_size: int | None, dtype: np.dtype) -> np.ndarray:
  path = root / SPLIT_FILES[split]
  if not path.is_file():
    raise ValueError(
        f"directory {str(root)!r} holds no {SPLIT_FILES[split]}: a pre-split directory "
        f"needs both {' and '.join(SPLIT_FILES.values())}")
  tokens = _open_raw(path, dtype)
  if tokens.size == 0:
    raise ValueError(f"token file {str(path)!r} is empty")
  return _checked_tokens(tokens, 0, tokens.size, max_bytes, vocab_size, split, path)


def _checked_tokens(tokens: np.ndarray, start: int, stop: int, max_bytes: int | None,
                    vocab_size: int | None, split: Split, path: pathlib.Path) -> np.ndarray:
  """tokens[start:stop], cut to `max_bytes`, with its ids checked against `vocab_size`."""
  if max_bytes is not None:
    max_tokens = max_bytes // tokens.dtype.itemsize
    if max_tokens < 1:
      raise ValueError(
          f"max_bytes={max_bytes} is less than one {tokens.dtype} token of {str(path)!r}")
    stop = min(stop, start + max_tokens)
  tokens = tokens[start:stop]
  if vocab_size is not None:
    max_id = int(tokens.max())
    if max_id >= vocab_size:
      raise ValueError(
          f"token file {str(path)!r} holds id {max_id} in split {split!r}, but vocab_size is "
          f"{vocab_size}; ids must be < vocab_size")
  return tokens
