"""The entry points on a pre-tokenised corpus in nanoGPT's layout (train.bin, val.bin of
uint16 ids) with its own bytes-per-token table: train, resume, evaluate, generate and
compare end to end; without a table, BPB is not reported and nothing crashes; a vocabulary
that does not fit the data fails in one line before training."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from tests.experiments.cli_flags import TOY_LM_MODEL, TOY_LM_TRAIN, config_overrides

TOP_ID = 599  # ids in [0, 600): the model vocabulary follows them to 640
BOS = TOP_ID  # starts every document and stands for no bytes
TINY = ["--config=experiments/configs/swa_tiny.py", "--config.model.d_model=32",
        "--config.model.num_heads=2", "--config.model.num_layers=2", "--config.model.pattern=SA",
        "--config.model.window=16", "--config.model.max_seq_len=64",
        "--config.train.seq_len=64", "--config.train.batch_size=4", "--config.train.log_every=1",
        "--config.train.eval_tokens=256", "--config.train.eval_batch_size=4",
        "--config.data.tokenizer=none"]


def last_json(stdout):
  return json.loads(stdout.strip().splitlines()[-1])


def _documents(rng, count):
  """BOS-led documents of ids that repeat short random phrases (something to learn)."""
  phrases = [rng.integers(0, TOP_ID, rng.integers(2, 6)) for _ in range(40)]
  docs = []
  for _ in range(count):
    body = np.concatenate([phrases[i] for i in rng.integers(0, 40, rng.integers(5, 30))])
    docs.append(np.concatenate([[BOS], body]))
  return np.concatenate(docs).astype("<u2")


@pytest.fixture(scope="module")
def token_corpus(tmp_path_factory):
  """(directory holding train.bin, val.bin and token_bytes.npy, the val ids, the table)."""
  root = tmp_path_factory.mktemp("fineweb_like")
  rng = np.random.default_rng(0)
  train, val = _documents(rng, 300), _documents(rng, 40)
  train[5] = TOP_ID - 1  # the largest non-BOS id occurs
  train.tofile(root / "train.bin")
  val.tofile(root / "val.bin")
  table = rng.integers(1, 8, TOP_ID + 1)  # BPE pieces of 1-7 bytes
  table[BOS] = 0
  np.save(root / "token_bytes.npy", table)
  np.save(root / "short.npy", table[:100])  # a table that misses ids
  return str(root), val, table


def test_train_resume_evaluate_generate_on_train_bin_val_bin(run_cli, run_cli_process,
                                                             token_corpus, tmp_path):
  root, val, table = token_corpus
  workdir = str(tmp_path / "run")
  flags = [*TINY, f"--data={root}", f"--config.data.token_bytes={root}/token_bytes.npy",
           f"--workdir={workdir}", "--steps=3"]
  stdout = run_cli("train", *flags, "--sample_tokens=6")
  trained = last_json(stdout)
  assert trained["step"] == 3 and trained["val_bpb"] > 0 and trained["unigram_bpb"] > 0
  # Samples print as ids: the first 4 validation ids, then 6 sampled ones.
  sample = stdout.split("sample:\n")[1].splitlines()[0].split()
  assert len(sample) == 10 and sample[:4] == [str(i) for i in val[:4]]
  assert all(0 <= int(i) < 640 for i in sample)
  saved = json.loads((tmp_path / "run" / "config.json").read_text())
  assert saved["model"]["vocab_size"] == 640  # 599 + 1, rounded up to a multiple of 64
  assert saved["data"]["tokenizer"] == "none" and saved["data"]["path"] == root

  resumed = last_json(run_cli("train", *flags, "--sample_tokens=0"))
  assert resumed["step"] == 3 and resumed["val_bpb"] == pytest.approx(trained["val_bpb"],
                                                                       rel=1e-6)

  evaluated = last_json(run_cli("evaluate", f"--workdir={workdir}"))
  assert evaluated["val_bpb"] == pytest.approx(trained["val_bpb"], rel=1e-5)
  # The first 256 targets, scored with the corpus's table (BOS targets carry no bytes).
  targets = val[1:257]
  assert evaluated["bytes"] == table[targets].sum()
  assert evaluated["tokens"] == np.count_nonzero(table[targets])

  generated = run_cli("generate", f"--workdir={workdir}", "--prompt_ids=3,1,4",
                      "--num_tokens=5", "--top_k=5").split()
  assert generated[:3] == ["3", "1", "4"] and len(generated) == 8
  no_ids = run_cli_process("generate", f"--workdir={workdir}", "--prompt=hello")
  assert no_ids.returncode == 2 and "--prompt_ids" in no_ids.stderr


def test_without_token_bytes_bpb_is_not_reported_and_nothing_crashes(run_cli, token_corpus,
                                                                     tmp_path):
  root, _, _ = token_corpus
  workdir = str(tmp_path / "run")
  trained = last_json(run_cli("train", *TINY, f"--data={root}", f"--workdir={workdir}",
                              "--steps=2", "--sample_tokens=3"))
  assert trained["val_bpb"] is None and trained["unigram_bpb"] is None
  assert "data.token_bytes" in trained["val_bpb_unavailable"]
  assert 0 < trained["val_loss"] < 2 * math.log(640)
  evaluated = last_json(run_cli("evaluate", f"--workdir={workdir}"))
  assert evaluated["val_bpb"] is None and evaluated["bytes"] is None
  assert evaluated["val_loss"] == pytest.approx(trained["val_loss"], rel=1e-5)


def test_compare_on_train_bin_val_bin_with_a_table(run_cli, token_corpus, tmp_path):
  root, _, _ = token_corpus
  # One config: training several is test_compare's; this is the token-file data path.
  stdout = run_cli("compare", "--configs=swa_tiny", "--steps=2",
                   f"--workdir_root={tmp_path}", f"--data={root}",
                   "--config.data.tokenizer=none",
                   f"--config.data.token_bytes={root}/token_bytes.npy",
                   *config_overrides("model", TOY_LM_MODEL),
                   *config_overrides("train", TOY_LM_TRAIN))
  summary = last_json(stdout)
  assert summary["unigram_bpb"] > 0 and "bpb_unavailable" not in summary
  for name in ("swa_tiny",):
    assert summary["models"][name]["val_bpb"] > 0
    saved = json.loads((tmp_path / name / "config.json").read_text())
    assert saved["model"]["vocab_size"] == 640
  assert "unigram BPB" in stdout


@pytest.mark.parametrize("flags, message", [
    (["--config.data.token_bytes={root}/token_bytes.npy", "--config.model.vocab_size=512"],
     "the data holds token id 599, beyond model.vocab_size=512"),
    (["--config.data.tokenizer=byte"], "beyond the 259 ids of data.tokenizer='byte'"),
    (["--config.data.token_bytes={root}/short.npy"], "only 100 entries"),
])
def test_a_vocabulary_that_does_not_fit_fails_in_one_line_before_training(
    run_cli_process, token_corpus, tmp_path, flags, message):
  root, _, _ = token_corpus
  workdir = tmp_path / "run"
  result = run_cli_process("train", *TINY, f"--data={root}", f"--workdir={workdir}",
                           *[flag.format(root=root) for flag in flags])
  lines = result.stderr.strip().splitlines()
  assert result.returncode == 2 and len(lines) == 1 and message in lines[0], lines
  assert not workdir.exists()
