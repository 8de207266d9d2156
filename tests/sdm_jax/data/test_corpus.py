from __future__ import annotations

import pathlib

import numpy as np
import pytest

from sdm_jax.data import corpus
from sdm_jax.data.tokenizer import BOS_ID, VOCAB_SIZE


def _documents(stream: np.ndarray) -> list[bytes]:
  """Splits a BOS-delimited byte stream back into documents."""
  boundaries = np.flatnonzero(stream == BOS_ID)
  assert boundaries.size and boundaries[0] == 0
  ends = list(boundaries[1:]) + [stream.size]
  return [stream[start + 1:end].astype(np.uint8).tobytes()
          for start, end in zip(boundaries, ends)]


def _write_tree(root: pathlib.Path, count: int) -> dict[str, bytes]:
  contents = {}
  for i in range(count):
    relative = f"sub{i % 3}/doc{i:03d}.txt"
    contents[relative] = f"document {i}\n".encode() * (i % 4 + 1)
    (root / relative).parent.mkdir(parents=True, exist_ok=True)
    (root / relative).write_bytes(contents[relative])
  return contents


# Split assignment.


def test_split_of_is_deterministic_and_monotone_in_val_fraction():
  paths = [f"pkg{i}/module{j}.py" for i in range(20) for j in range(20)]
  splits = [corpus.split_of(p, 0.1) for p in paths]
  assert splits == [corpus.split_of(p, 0.1) for p in paths]
  assert set(splits) == {"train", "val"}
  val_share = splits.count("val") / len(splits)
  assert 0.05 < val_share < 0.15
  # Raising val_fraction only moves files into val.
  for path, split in zip(paths, splits):
    if split == "val":
      assert corpus.split_of(path, 0.3) == "val"


def test_split_of_does_not_depend_on_file_order():
  paths = [f"a/{i}.py" for i in range(200)]
  forward = {p: corpus.split_of(p, 0.2) for p in paths}
  backward = {p: corpus.split_of(p, 0.2) for p in reversed(paths)}
  assert forward == backward


def test_split_of_rejects_bad_arguments():
  for fraction in (0.0, 1.0, -0.1, 1.5):
    with pytest.raises(ValueError, match="val_fraction"):
      corpus.split_of("a.py", fraction)
  with pytest.raises(ValueError, match="relative_path"):
    corpus.split_of("/abs/a.py", 0.1)
  with pytest.raises(ValueError, match="relative_path"):
    corpus.split_of("", 0.1)


# The embedded standard-library corpus.


def test_stdlib_source_files_found_sorted_and_without_site_packages():
  files = corpus.stdlib_source_files()
  root = corpus.stdlib_root()
  relative = [f.relative_to(root).as_posix() for f in files]
  assert len(files) > 100
  assert relative == sorted(relative)
  assert files == corpus.stdlib_source_files()
  assert all(f.suffix == ".py" for f in files)
  assert not any({"site-packages", "dist-packages"} & set(f.parts) for f in files)
  assert "os.py" in relative


def test_stdlib_splits_are_non_empty_and_disjoint():
  root = corpus.stdlib_root()
  relative = [f.relative_to(root).as_posix() for f in corpus.stdlib_source_files()]
  val = {p for p in relative if corpus.split_of(p, 0.05) == "val"}
  train = set(relative) - val
  assert val and train and not (val & train)
  assert 0.01 < len(val) / len(relative) < 0.1


def test_load_corpus_stdlib_gives_bos_delimited_bytes():
  streams = {split: corpus.load_corpus(split=split, max_bytes=100_000)
             for split in corpus.SPLITS}
  for stream in streams.values():
    assert stream.ndim == 1 and stream[0] == BOS_ID
    assert stream.max() < VOCAB_SIZE
    # max_bytes counts content bytes; BOS tokens come on top.
    assert np.count_nonzero(stream != BOS_ID) == 100_000
  assert not np.array_equal(streams["train"][:1000], streams["val"][:1000])
  # The first train document is the first train file of the sorted list.
  root = corpus.stdlib_root()
  first = next(f for f in corpus.stdlib_source_files()
               if corpus.split_of(f.relative_to(root).as_posix(), 0.05) == "train"
               and f.stat().st_size > 0)  # Empty files give no document.
  assert _documents(streams["train"])[0] == first.read_bytes()[:100_000]


# Text files.


def test_text_file_splits_by_bytes(tmp_path):
  data = bytes(range(32, 127)) * 4  # 380 bytes.
  path = tmp_path / "corpus.txt"
  path.write_bytes(data)
  train = corpus.load_corpus(path, split="train", val_fraction=0.1)
  val = corpus.load_corpus(str(path), split="val", val_fraction=0.1)
  assert train.dtype == np.uint16
  assert _documents(train) == [data[:342]]
  assert _documents(val) == [data[342:]]
  capped = corpus.load_corpus(path, split="val", val_fraction=0.1, max_bytes=5)
  assert _documents(capped) == [data[342:347]]


def test_text_file_errors(tmp_path):
  empty = tmp_path / "empty.txt"
  empty.write_bytes(b"")
  with pytest.raises(ValueError, match="empty"):
    corpus.load_corpus(empty, split="train")
  tiny = tmp_path / "tiny.txt"
  tiny.write_bytes(b"abc")
  with pytest.raises(ValueError, match="'val' .* is empty"):
    corpus.load_corpus(tiny, split="val", val_fraction=0.1)
  binary = tmp_path / "blob.dat"
  binary.write_bytes(b"ab\0cd")
  with pytest.raises(ValueError, match="binary"):
    corpus.load_corpus(binary, split="train")
  with pytest.raises(ValueError, match="vocab_size"):
    corpus.load_corpus(tiny, split="train", val_fraction=0.5, vocab_size=256)


# Directories.


def test_directory_splits_by_path_hash(tmp_path):
  contents = _write_tree(tmp_path, 60)
  (tmp_path / ".hidden.txt").write_bytes(b"secret")
  (tmp_path / ".git").mkdir()
  (tmp_path / ".git" / "config").write_bytes(b"secret")
  (tmp_path / "image.png").write_bytes(b"\x89PNG\0\0\0")
  (tmp_path / "empty.txt").write_bytes(b"")
  streams = {split: corpus.load_corpus(tmp_path, split=split, val_fraction=0.2)
             for split in corpus.SPLITS}
  for split, stream in streams.items():
    expected = [contents[p] for p in sorted(contents) if corpus.split_of(p, 0.2) == split]
    assert expected, split
    assert _documents(stream) == expected


def test_directory_max_bytes_truncates_in_file_order(tmp_path):
  contents = _write_tree(tmp_path, 30)
  stream = corpus.load_corpus(tmp_path, split="train", val_fraction=0.2, max_bytes=40)
  train_bytes = b"".join(contents[p] for p in sorted(contents)
                         if corpus.split_of(p, 0.2) == "train")
  assert b"".join(_documents(stream)) == train_bytes[:40]


def test_directory_errors(tmp_path):
  with pytest.raises(ValueError, match="no usable files"):
    corpus.load_corpus(tmp_path, split="train")
  (tmp_path / ".hidden").write_bytes(b"text")
  (tmp_path / "bin.dat").write_bytes(b"\0\1\2")
  with pytest.raises(ValueError, match="no usable files"):
    corpus.load_corpus(tmp_path, split="train")
  # Find a name that hashes to train so the val split of a one-file directory is empty.
  name = next(f"only{i}.txt" for i in range(100) if corpus.split_of(f"only{i}.txt", 0.05)
              == "train")
  (tmp_path / name).write_bytes(b"some text")
  assert corpus.load_corpus(tmp_path, split="train").size == 10
  with pytest.raises(ValueError, match="split 'val' .* is empty"):
    corpus.load_corpus(tmp_path, split="val")


# Pre-tokenised ids.


@pytest.mark.parametrize("dtype", [np.uint16, np.uint32])
def test_npy_file_splits_by_tokens(tmp_path, dtype):
  ids = (np.arange(200) * 7 % 1000).astype(dtype)
  path = tmp_path / "ids.npy"
  np.save(path, ids)
  train = corpus.load_corpus(path, split="train", val_fraction=0.25, vocab_size=1000)
  val = corpus.load_corpus(path, split="val", val_fraction=0.25, vocab_size=1000)
  assert train.dtype == dtype
  np.testing.assert_array_equal(train, ids[:150])
  np.testing.assert_array_equal(val, ids[150:])
  capped = corpus.load_corpus(path, split="val", val_fraction=0.25, vocab_size=1000,
                              max_bytes=10 * np.dtype(dtype).itemsize)
  np.testing.assert_array_equal(capped, ids[150:160])


@pytest.mark.parametrize("suffix, dtype", [(".u16.bin", "<u2"), (".u32.bin", "<u4")])
def test_raw_bin_file_dtype_from_suffix(tmp_path, suffix, dtype):
  ids = np.arange(100, dtype=dtype) * 3
  path = tmp_path / f"ids{suffix}"
  ids.tofile(path)
  train = corpus.load_corpus(path, split="train", val_fraction=0.1, vocab_size=300)
  val = corpus.load_corpus(path, split="val", val_fraction=0.1, vocab_size=300)
  np.testing.assert_array_equal(train, ids[:90])
  np.testing.assert_array_equal(val, ids[90:])


def test_token_file_errors(tmp_path):
  big = tmp_path / "big.npy"
  np.save(big, np.array([1, 2, 700, 3] * 10, dtype=np.uint16))
  with pytest.raises(ValueError, match="700.*vocab_size is 259"):
    corpus.load_corpus(big, split="train", val_fraction=0.5)
  signed = tmp_path / "signed.npy"
  np.save(signed, np.arange(10, dtype=np.int64))
  with pytest.raises(ValueError, match="uint16 or uint32"):
    corpus.load_corpus(signed, split="train")
  two_d = tmp_path / "two_d.npy"
  np.save(two_d, np.zeros((3, 3), dtype=np.uint16))
  with pytest.raises(ValueError, match="1-D"):
    corpus.load_corpus(two_d, split="train")
  empty = tmp_path / "empty.u16.bin"
  empty.write_bytes(b"")
  with pytest.raises(ValueError, match="empty"):
    corpus.load_corpus(empty, split="train")
  odd = tmp_path / "odd.u32.bin"
  odd.write_bytes(b"\0" * 6)
  with pytest.raises(ValueError, match="multiple of 4"):
    corpus.load_corpus(odd, split="train")
  unknown = tmp_path / "ids.bin"
  unknown.write_bytes(b"\0" * 8)
  with pytest.raises(ValueError, match=r"\.u16\.bin"):
    corpus.load_corpus(unknown, split="train")


# Arguments.


def test_load_corpus_argument_errors(tmp_path):
  with pytest.raises(ValueError, match="does not exist"):
    corpus.load_corpus(tmp_path / "missing.txt", split="train")
  with pytest.raises(ValueError, match="split"):
    corpus.load_corpus(split="test")
  for fraction in (0.0, 1.0):
    with pytest.raises(ValueError, match="val_fraction"):
      corpus.load_corpus(split="train", val_fraction=fraction)
  with pytest.raises(ValueError, match="max_bytes"):
    corpus.load_corpus(split="train", max_bytes=0)


# Pre-split directories (nanoGPT's train.bin / val.bin).


def _write_split_directory(root: pathlib.Path, dtype, high: int, seed: int = 0
                           ) -> dict[str, np.ndarray]:
  rng = np.random.default_rng(seed)
  splits = {"train": rng.integers(0, high, 300).astype(dtype),
            "val": rng.integers(0, high, 70).astype(dtype)}
  for split, ids in splits.items():
    ids.tofile(root / corpus.SPLIT_FILES[split])
  return splits


@pytest.mark.parametrize("token_dtype, dtype, high", [("uint16", "<u2", 50_257),
                                                      ("uint32", "<u4", 100_000)])
def test_split_directory_gives_its_own_splits(tmp_path, token_dtype, dtype, high):
  splits = _write_split_directory(tmp_path, dtype, high)
  assert corpus.holds_token_ids(tmp_path)
  for split, ids in splits.items():
    # val_fraction does not apply: the files are the splits.
    for val_fraction in (0.05, 0.5):
      got = corpus.load_corpus(tmp_path, split=split, val_fraction=val_fraction,
                               vocab_size=None, token_dtype=token_dtype)
      assert got.dtype == np.dtype(dtype)
      np.testing.assert_array_equal(got, ids)
  capped = corpus.load_corpus(str(tmp_path), split="train", vocab_size=None,
                              token_dtype=token_dtype, max_bytes=10 * np.dtype(dtype).itemsize)
  np.testing.assert_array_equal(capped, splits["train"][:10])


def test_split_directory_checks_ids_against_vocab_size(tmp_path):
  splits = _write_split_directory(tmp_path, "<u2", 1000)
  top = int(splits["val"].max())
  with pytest.raises(ValueError, match=f"val.bin' holds id {top} in split 'val'"):
    corpus.load_corpus(tmp_path, split="val", vocab_size=top)
  assert corpus.load_corpus(tmp_path, split="val", vocab_size=top + 1).size == 70


def test_split_directory_errors(tmp_path):
  (tmp_path / "train.bin").write_bytes(np.arange(9, dtype="<u2").tobytes())  # 18 bytes
  with pytest.raises(ValueError, match="holds no val.bin"):
    corpus.load_corpus(tmp_path, split="val", vocab_size=None)
  (tmp_path / "val.bin").write_bytes(b"\0" * 3)
  with pytest.raises(ValueError, match="not a multiple of 2"):
    corpus.load_corpus(tmp_path, split="val", vocab_size=None)
  with pytest.raises(ValueError, match="not a multiple of 4"):
    corpus.load_corpus(tmp_path, split="train", vocab_size=None, token_dtype="uint32")
  (tmp_path / "val.bin").write_bytes(b"")
  with pytest.raises(ValueError, match="is empty"):
    corpus.load_corpus(tmp_path, split="val", vocab_size=None)
  with pytest.raises(ValueError, match="token_dtype must be one of"):
    corpus.load_corpus(tmp_path, split="train", token_dtype="int64")


def test_a_bare_bin_file_points_at_its_directory(tmp_path):
  (tmp_path / "train.bin").write_bytes(np.arange(8, dtype="<u2").tobytes())
  with pytest.raises(ValueError, match="give their directory"):
    corpus.load_corpus(tmp_path / "train.bin", split="train")


def test_holds_token_ids_tells_token_files_from_text(tmp_path):
  text = tmp_path / "a.txt"
  text.write_text("hello")
  ids = tmp_path / "ids.u16.bin"
  ids.write_bytes(b"\0\0")
  assert corpus.holds_token_ids(ids) and not corpus.holds_token_ids(text)
  assert not corpus.holds_token_ids(tmp_path) and not corpus.holds_token_ids(None)
