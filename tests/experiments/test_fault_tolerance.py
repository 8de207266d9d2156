"""Fault injection on the entry points: kill -9 and SIGTERM/SIGINT mid-run then resume,
damaged checkpoints, and bad inputs that must fail in one line without touching anything.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import signal
import time

import jax
import numpy as np
import pytest

from sdm_jax.training.lm_training import load_lm
from tests.experiments.cli_flags import TOY_LM_MODEL, TOY_LM_TRAIN, config_overrides

STEPS = 10
# swa_tiny narrowed to seconds of CPU compilation; a checkpoint every 2 steps.
TINY = ["--config=experiments/configs/swa_tiny.py", "--config.model.d_model=32",
        "--config.model.num_heads=2", "--config.model.num_layers=2", "--config.model.pattern=SA",
        "--config.model.window=16", "--config.model.max_seq_len=64",
        "--config.train.seq_len=64", "--config.train.batch_size=4",
        "--config.train.log_every=1", "--config.train.checkpoint_every=2",
        "--config.train.keep_checkpoints=3", "--config.train.eval_tokens=256",
        "--config.train.eval_batch_size=4", "--config.data.max_train_bytes=200000",
        "--sample_tokens=0"]


def train_flags(workdir, steps=STEPS):
  return [*TINY, f"--workdir={workdir}", f"--steps={steps}"]


def checkpoint_steps(workdir):
  return sorted(int(os.path.basename(p)) for p in glob.glob(f"{workdir}/checkpoints/*")
                if os.path.basename(p).isdigit())


def wait_until(process, condition, what, timeout=120):
  """Polls `condition()` while `process` runs; fails if it ends or times out first."""
  start = time.time()
  while time.time() - start < timeout:
    if process.poll() is not None:
      raise AssertionError(f"run ended before {what}: {process.stderr.read()}")
    if condition():
      return
    time.sleep(0.05)
  raise AssertionError(f"no {what} after {timeout} s")


def wait_for_checkpoint(process, workdir, at_least):
  wait_until(process, lambda: any(step >= at_least for step in checkpoint_steps(workdir)),
             f"checkpoint {at_least}")


def assert_same_parameters(workdir_a, workdir_b):
  _, params_a, _, step_a = load_lm(workdir_a)
  _, params_b, _, step_b = load_lm(workdir_b)
  assert step_a == step_b == STEPS
  jax.tree.map(lambda a, b: np.testing.assert_array_equal(np.asarray(a), np.asarray(b)),
               params_a, params_b)


def metrics_steps(workdir):
  with open(os.path.join(workdir, "metrics.jsonl")) as f:
    return [json.loads(line)["step"] for line in f]


@pytest.fixture(scope="module")
def straight(tmp_path_factory, run_cli):
  """An uninterrupted run: the reference every interrupted one must reproduce."""
  workdir = str(tmp_path_factory.mktemp("straight"))
  run_cli("train", *train_flags(workdir))
  return workdir


def test_kill_9_twice_then_resume_is_bit_identical(straight, start_cli, run_cli, tmp_path):
  workdir = str(tmp_path / "killed")
  for at_least in (2, 6):
    process = start_cli("train", *train_flags(workdir))
    wait_for_checkpoint(process, workdir, at_least)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
  stdout = run_cli("train", *train_flags(workdir))
  assert "resumed from" in stdout
  assert_same_parameters(straight, workdir)
  assert metrics_steps(workdir) == list(range(1, STEPS + 1))  # no duplicates


@pytest.mark.parametrize("signum,status", [(signal.SIGTERM, 0), (signal.SIGINT, 130)])
def test_a_signal_saves_the_current_step_then_resume_is_bit_identical(
    straight, start_cli, run_cli, tmp_path, signum, status):
  workdir = str(tmp_path / "signalled")
  process = start_cli("train", *train_flags(workdir))
  wait_for_checkpoint(process, workdir, 2)
  process.send_signal(signum)
  stdout, stderr = process.communicate(timeout=120)
  assert process.returncode == status, stderr[-2000:]
  name = signal.Signals(signum).name
  assert f"{name}: stopped after step" in stdout and "resume:" in stdout
  summary = json.loads(open(os.path.join(workdir, "summary.json")).read())
  assert summary["stopped_by"] == name and summary["step"] == max(checkpoint_steps(workdir))
  assert summary["step"] < STEPS
  run_cli("train", *train_flags(workdir))
  assert_same_parameters(straight, workdir)
  assert metrics_steps(workdir) == list(range(1, STEPS + 1))


def _damage(workdir, step, how):
  files = [f for f in glob.glob(f"{workdir}/checkpoints/{step}/**/*", recursive=True)
           if os.path.isfile(f)]
  if how == "truncate":
    target = max(files, key=os.path.getsize)
    with open(target, "r+b") as f:
      f.truncate(os.path.getsize(target) // 2)
  else:
    target = next(f for f in files if f.endswith(os.path.join("default", "_METADATA")))
    open(target, "w").close()


@pytest.mark.parametrize("how", ["truncate", "empty"])
def test_a_damaged_latest_checkpoint_falls_back_to_the_newest_intact_one(
    straight, run_cli_process, run_cli, tmp_path, how):
  workdir = str(tmp_path / "damaged")
  shutil.copytree(straight, workdir)  # the same 10 steps, trained once per module
  assert checkpoint_steps(workdir) == [6, 8, 10]
  _damage(workdir, 10, how)
  evaluated = run_cli_process("evaluate", f"--workdir={workdir}")
  assert evaluated.returncode == 0, evaluated.stderr[-2000:]
  stderr = evaluated.stderr.strip().splitlines()
  assert len(stderr) == 1 and stderr[0].startswith("warning: checkpoint step 10"), stderr
  assert json.loads(evaluated.stdout.strip().splitlines()[-1])["step"] == 8
  explicit = run_cli_process("evaluate", f"--workdir={workdir}", "--step=10")
  assert explicit.returncode == 2
  stderr = explicit.stderr.strip().splitlines()
  assert len(stderr) == 1 and "checkpoint step 10" in stderr[0], stderr
  assert "intact steps: [6, 8]" in stderr[0]
  # Training resumes from step 8, redoes 9 and 10 and ends where the straight run did.
  stdout = run_cli("train", *train_flags(workdir))
  assert "resumed from" in stdout
  assert_same_parameters(straight, workdir)
  assert metrics_steps(workdir) == list(range(1, STEPS + 1))


BAD_INPUTS = [
    ("unknown config", "train", ["--config=experiments/configs/nope.py"], "known configs"),
    ("missing data", "train", ["--data=/nonexistent/corpus.txt"], "does not exist"),
    ("empty data", "train", ["--data={empty}"], "is empty"),
    ("binary data", "train", ["--data={binary}"], "looks binary"),
    ("window 0", "train", ["--config.model.window=0"], "window must be >= 1"),
    ("window beyond the context", "train", ["--config.model.window=4096"], "max_seq_len"),
    ("non-square slots", "train", ["--config=experiments/configs/sdm_tiny.py",
                                   "--config.model.sdm_slots=50"], "perfect square"),
    ("more writes than slots", "train", ["--config=experiments/configs/sdm_tiny.py",
                                         "--config.model.sdm_slots=16",
                                         "--config.model.sdm_writes=20"], "sdm_writes"),
    ("unknown pattern letter", "train", ["--config.model.pattern=SX"], "unknown layer"),
    ("misspelled field", "train", ["--config.model.windw=4"], 'Did you mean "window"'),
    ("misspelled flag", "train", ["--stpes=3"], "Did you mean: steps"),
    ("evaluate an empty workdir", "evaluate", [], "holds no config.json"),
]


@pytest.mark.parametrize("case,module,flags,message", BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_inputs_fail_in_one_line_and_touch_nothing(run_cli_process, tmp_path, case, module,
                                                       flags, message):
  del case
  (tmp_path / "empty.txt").write_text("")
  (tmp_path / "binary.dat").write_bytes(bytes(range(256)) * 8)
  flags = [f.format(empty=tmp_path / "empty.txt", binary=tmp_path / "binary.dat")
           for f in flags]
  workdir = tmp_path / "run"
  workdir_flag = [f"--workdir={workdir}"]
  result = run_cli_process(module, *flags, *workdir_flag)
  assert result.returncode == 2, result.stderr[-2000:]
  lines = result.stderr.strip().splitlines()
  assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines
  assert not workdir.exists()


def test_one_line_from_a_fresh_interpreter_and_verbose_shows_the_traceback(
    run_cli_subprocess, tmp_path):
  # The cases above run in forks of a process that had imported the libraries; these two
  # start Python as a user does.
  workdir = tmp_path / "run"
  result = run_cli_subprocess("train", "--config.model.window=0", f"--workdir={workdir}")
  assert result.returncode == 2, result.stderr[-2000:]
  lines = result.stderr.strip().splitlines()
  assert len(lines) == 1 and lines[0].startswith("error: ") and "window must be >= 1" in lines[0]
  assert not workdir.exists()
  result = run_cli_subprocess("train", "--config.model.window=0", "--verbose")
  assert result.returncode != 0 and "Traceback" in result.stderr


def test_sigterm_stops_a_comparison_at_a_saved_step(start_cli, tmp_path, toy_corpus):
  process = start_cli("compare", "--configs=gdn_tiny,sdm_tiny_no_m0", "--steps=200",
                      f"--workdir_root={tmp_path}", f"--data={toy_corpus}",
                      *config_overrides("model", TOY_LM_MODEL),
                      *config_overrides("train", TOY_LM_TRAIN))
  metrics = tmp_path / "gdn_tiny" / "metrics.jsonl"
  wait_until(process, lambda: metrics.exists() and metrics.read_text().count("\n") >= 2,
             "two logged steps")
  process.send_signal(signal.SIGTERM)
  stdout, stderr = process.communicate(timeout=120)
  assert process.returncode == 0, stderr[-2000:]
  summary = json.loads(stdout.strip().splitlines()[-1])
  assert summary["stopped_by"] == "SIGTERM" and summary["models"] == {}
  assert f"--workdir_root={tmp_path} to resume" in stdout
  assert checkpoint_steps(str(tmp_path / "gdn_tiny"))  # the stopped step was saved
