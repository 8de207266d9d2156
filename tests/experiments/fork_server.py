"""Runs `python -m experiments.<module> <flags>` as forks of one process that imported
the libraries once (about 4 s of every entry point's start on a CPU core).

  python -m tests.experiments.fork_server    # in the repository root, with the tests' env

Each stdin line is a JSON request [module, flags, stdout_path, stderr_path]; the server
forks and answers with the child's pid, then with its exit status as Python's `subprocess`
gives it.
The child is a new process in all but its start: it imports and runs the entry point as
`__main__` with its own argv, then leaves through Python's normal exit (atexit hooks,
thread joins, flushes), so its output, status and leftovers are what `python -m` gives.
Nothing here starts JAX's backend or a thread before the fork.
"""

from __future__ import annotations

import importlib
import json
import os
import runpy
import sys
import threading

from jax._src import xla_bridge

# What the entry points import, but no entry point itself: those define their flags, reading
# sys.argv, when imported.
PRELOADED = ("experiments.common", "matplotlib.pyplot", "orbax.checkpoint",
             "sdm_jax.training.lm_training")


def _serve() -> list:
  """Answers requests until stdin closes; returns a request only in the child it forked.
  Two reply lines per request: the child's pid (a client's timeout kills it), then its
  exit status."""
  # A fork copies no threads: one running now (JAX's backend has several) could leave a
  # lock held in the child.
  assert threading.active_count() == 1 and not xla_bridge._backends  # pylint: disable=protected-access
  while True:
    line = sys.stdin.readline()
    if not line:
      sys.exit(0)
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
      return request
    print(pid, flush=True)
    _, status = os.waitpid(pid, 0)
    print(os.waitstatus_to_exitcode(status), flush=True)


def main() -> None:
  for name in PRELOADED:
    importlib.import_module(name)
  module, flags, stdout_path, stderr_path = _serve()
  stdin = os.open(os.devnull, os.O_RDONLY)
  os.dup2(stdin, 0)
  for fd, path in ((1, stdout_path), (2, stderr_path)):
    os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
  sys.argv = [sys.argv[0], *flags]
  runpy.run_module(f"experiments.{module}", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
  main()
