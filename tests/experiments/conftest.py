"""Running the entry points in subprocesses, quickly.

Every subprocess shares the test sessions' persistent compilation cache, so an entry point
that compiles what an earlier one compiled (evaluate after train, the same toy model in two
scripts, the same test in the last session) loads it instead; cheap XLA CPU optimisation
levels cut the compile time of the rest. `run_cli` and `run_cli_process` fork each run from
a process that imported the libraries once; `start_cli` and `run_cli_subprocess` start
Python afresh, as a user does.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from typing import Callable, Iterator

import pytest

from tests.subprocess_env import TEST_CACHE_DIR, subprocess_pythonpath

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FAST_COMPILE_XLA_FLAGS = ("--xla_llvm_disable_expensive_passes=true "
                          "--xla_backend_optimization_level=0")


@pytest.fixture(scope="session")
def cli_env() -> dict[str, str]:
  """The environment of the entry points' subprocesses (CPU, a shared compile cache)."""
  # A per-session cache recompiled every entry point's programs on every run (the CLI
  # round trip alone: 83 s so, 44 s warm); the persistent one keeps them between runs, as
  # the mesh training test's subprocesses already did.
  return {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": subprocess_pythonpath(),
          "XLA_FLAGS": FAST_COMPILE_XLA_FLAGS,
          "JAX_COMPILATION_CACHE_DIR": TEST_CACHE_DIR,
          "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
          "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0"}


@pytest.fixture(scope="session")
def start_cli(cli_env) -> Callable[..., subprocess.Popen]:
  """start_cli(module, *flags) -> a running `python -m experiments.<module>` (stdout and
  stderr piped as text), for tests that signal or kill it."""
  def start(module: str, *flags: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", f"experiments.{module}", *flags],
                            cwd=ROOT, env=cli_env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
  return start


@pytest.fixture(scope="session")
def run_cli_subprocess(cli_env) -> Callable[..., subprocess.CompletedProcess]:
  """run_cli_subprocess(module, *flags) -> the finished `python -m experiments.<module>`
  (return code, stdout and stderr) in a fresh interpreter, whether it succeeded or not."""
  def run(module: str, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", f"experiments.{module}", *flags], cwd=ROOT,
                          env=cli_env, capture_output=True, text=True, timeout=300,
                          check=False)
  return run


@pytest.fixture(scope="session")
def run_cli_process(cli_env, tmp_path_factory
                    ) -> Iterator[Callable[..., subprocess.CompletedProcess]]:
  """run_cli_process(module, *flags) -> the finished `python -m experiments.<module>`
  (return code, stdout and stderr), whether it succeeded or not: a fork of a process that
  imported the libraries once (tests/experiments/fork_server.py), about 4 s faster than
  `run_cli_subprocess`."""
  directory = tmp_path_factory.mktemp("fork_server")
  out, err = str(directory / "stdout"), str(directory / "stderr")
  with open(directory / "server.log", "w") as log:
    server = subprocess.Popen([sys.executable, "-m", "tests.experiments.fork_server"],
                              cwd=ROOT, env=cli_env, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=log, text=True)

  def reply(timeout: float | None) -> int:
    if not select.select([server.stdout], [], [], timeout)[0]:
      raise subprocess.TimeoutExpired(["fork_server"], timeout)
    line = server.stdout.readline()
    assert line, (directory / "server.log").read_text()[-3000:]  # the server died
    return int(line)

  def run(module: str, *flags: str) -> subprocess.CompletedProcess:
    server.stdin.write(json.dumps([module, list(flags), out, err]) + "\n")
    server.stdin.flush()
    pid = reply(None)
    try:
      returncode = reply(300)
    except subprocess.TimeoutExpired:
      os.kill(pid, signal.SIGKILL)
      reply(None)
      raise
    with open(out) as stdout, open(err) as stderr:
      return subprocess.CompletedProcess([module, *flags], returncode, stdout.read(),
                                         stderr.read())
  yield run
  server.stdin.close()
  server.wait(timeout=60)


@pytest.fixture(scope="session")
def run_cli(run_cli_process) -> Callable[..., str]:
  """run_cli(module, *flags) -> stdout of `python -m experiments.<module> <flags>`, which
  must succeed."""
  def run(module: str, *flags: str) -> str:
    result = run_cli_process(module, *flags)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout
  return run


@pytest.fixture(scope="session")
def toy_corpus(tmp_path_factory) -> str:
  """A small text file: enough windows of 32 tokens for training and validation."""
  path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
  path.write_text("".join(f"def add_{i}(x):\n  return x + {i * 7 % 100}\n\n"
                          for i in range(400)))
  return str(path)
