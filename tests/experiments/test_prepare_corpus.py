"""`experiments.prepare_corpus` without network: text files through the byte tokenizer into
a corpus `experiments.train` reads, and the one-line errors (the tokenisation itself is
tested in tests/sdm_jax/data/test_token_files.py)."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

from sdm_jax.data.corpus import load_corpus


def test_text_files_become_train_bin_val_bin_and_token_bytes(run_cli, tmp_path):
  source = tmp_path / "texts"
  source.mkdir()
  for i in range(30):
    (source / f"doc{i}.txt").write_text(f"print({i} * 'x')\n" * (i % 5 + 1))
  output = tmp_path / "corpus"
  stdout = run_cli("prepare_corpus", f"--input={source}", f"--output_dir={output}",
                   "--tokenizer=byte", "--val_fraction=0.2", "--num_threads=2")
  stats = json.loads(stdout.strip().splitlines()[-1])
  assert stats["train_flags"] == f"--data={output}"  # byte ids: the defaults read them
  assert sum(stats["documents"].values()) == 30 and stats["token_dtype"] == "uint16"
  for split in ("train", "val"):
    np.testing.assert_array_equal(load_corpus(output, split=split),
                                  load_corpus(source, split=split, val_fraction=0.2))
  assert np.load(output / "token_bytes.npy").shape == (259,)


@pytest.mark.parametrize("flags, message, absent", [
    (["--input={source}", "--dataset=some/dataset"], "either --input", None),
    (["--dataset=some/dataset", "--tokenizer=byte"], "needs the datasets package", "datasets"),
    (["--input={source}", "--tokenizer=gpt2"], "tiktoken is not installed", "tiktoken"),
    (["--input={source}", "--tokenizer=none"], "not 'none'", None),
])
def test_bad_requests_fail_in_one_line(run_cli_process, tmp_path, flags, message, absent):
  if absent is not None and importlib.util.find_spec(absent) is not None:
    pytest.skip(f"{absent} is installed here")
  source = tmp_path / "texts"
  source.mkdir()
  (source / "a.txt").write_text("hello")
  result = run_cli_process("prepare_corpus", f"--output_dir={tmp_path / 'out'}",
                           *[flag.format(source=source) for flag in flags])
  lines = result.stderr.strip().splitlines()
  assert result.returncode == 2 and len(lines) == 1 and message in lines[0], lines
  assert not (tmp_path / "out").exists()
