"""How every entry point starts and fails: `cli.run(main)` instead of `absl.app.run(main)`.

* A user error (a bad flag or config field, a ValueError from a check, a missing file, a
  damaged checkpoint) prints one line, `error: <message>`, to stderr and exits with
  status 2; `--verbose` shows the full traceback instead. A run stopped by a diverging
  loss prints one line and exits with status 1.
* Library warnings (absl logging below ERROR, Python warnings) stay off the console unless
  `--verbose` (or absl's `--verbosity`) asks for them.
* `main` may return an exit status (e.g. 130 after Ctrl-C stopped training).
"""

from __future__ import annotations

import logging as std_logging
import re
import sys
import threading
from typing import Callable
import warnings

from absl import app
from absl import flags
from absl import logging

from sdm_jax.training.loop import NonFiniteLossError

USAGE_ERROR = 2
_VERBOSE = flags.DEFINE_boolean("verbose", False, "Full tracebacks on errors and library "
                                "warnings on the console.")
# Errors a user can fix from the command line or the file system (the checks raise
# ValueError; ml_collections KeyError for unknown fields; missing files OSError). A bug
# that raises one of these also shows as one line: --verbose gives its traceback.
USER_ERRORS = (ValueError, KeyError, OSError)
_EXCEPTION_LINE = re.compile(r"^\s*(?:[\w.]+\.)?(\w*(?:Error|Exception)): (.+)$")


def _fail(message: str, status: int = USAGE_ERROR) -> None:
  print(f"error: {message}", file=sys.stderr, flush=True)
  sys.exit(status)


def one_line(message: str) -> str:
  """The line of a (possibly multi-line, traceback-carrying) message that says what went
  wrong: the last 'SomeError: text' line if there is one, else the first line."""
  lines = [line for line in str(message).splitlines() if line.strip()]
  for line in reversed(lines):
    match = _EXCEPTION_LINE.match(line)
    if match:
      return match.group(2).strip()
  return lines[0].strip() if lines else "unknown error"


def _describe(error: BaseException) -> str:
  """One line for an exception. KeyError and AttributeError carry their message as a
  (possibly multi-line) argument, as ml_collections' "Did you mean" suggestions do."""
  if isinstance(error, (KeyError, AttributeError)) and error.args:
    text = str(error.args[0])
    while isinstance(text, str) and len(text) > 1 and text[0] == text[-1] and text[0] in "'\"":
      text = text[1:-1]  # str() of a KeyError quotes its message, sometimes twice
    text = text.replace("\\n", "\n").replace("\\'", "'")
    parts = [part.strip() for part in text.splitlines() if part.strip()]
    if len(parts) > 1 and parts[0].strip("'\"") and len(parts[0]) < 40:
      return f"unknown field {parts[0]}: " + " ".join(parts[1:])
    return " ".join(parts) or type(error).__name__
  return one_line(str(error)) if str(error) else type(error).__name__


def _parse_flags(argv: list[str]) -> list[str]:
  try:
    return flags.FLAGS(argv)
  # ml_collections raises AttributeError/KeyError for a misspelled --config.<field>.
  except (flags.Error, AttributeError, *USER_ERRORS) as error:
    if "--verbose" in argv:
      raise
    _fail(_describe(error))
  return []  # not reached


def stop_status(stopped_by: str | None) -> int:
  """The exit status of a run a signal may have stopped: SIGTERM (preemption) is a clean
  stop (0); Ctrl-C keeps the shell's 128 + SIGINT (130)."""
  return 130 if stopped_by == "SIGINT" else 0


def define_config(definer: Callable[..., flags.FlagHolder], *args, **kwargs
                  ) -> flags.FlagHolder:
  """Calls an ml_collections `DEFINE_config_*`. Those read `--config.<field>=` overrides
  from sys.argv while the flag is defined, at import, before `run` is in charge; a
  misspelled field fails there, and becomes the one-line error here too."""
  try:
    return definer(*args, **kwargs)
  except (AttributeError, *USER_ERRORS) as error:
    if "--verbose" in sys.argv:
      raise
    _fail(_describe(error))
  raise AssertionError("not reached")


def _is_teardown_noise(error: BaseException | None) -> bool:
  # A failed orbax restore leaves reads in flight; when they finish, their callbacks find
  # the event loop closed and their coroutines are collected unfinished (dozens of
  # tracebacks that hide the one line that matters).
  return isinstance(error, RuntimeError) and "Event loop is closed" in str(error)


def _quiet_libraries() -> None:
  if _VERBOSE.value or flags.FLAGS["verbosity"].present:
    return
  logging.set_verbosity(logging.ERROR)
  warnings.filterwarnings("ignore")
  previous_excepthook, previous_thread_hook = sys.excepthook, threading.excepthook

  def excepthook(kind, error, trace):
    if not _is_teardown_noise(error):
      previous_excepthook(kind, error, trace)

  def thread_hook(args):
    if not _is_teardown_noise(args.exc_value):
      previous_thread_hook(args)

  def unraisable_hook(unraisable):
    # Coroutines collected unfinished after a failed restore; nothing a user can act on.
    del unraisable

  sys.excepthook, threading.excepthook = excepthook, thread_hook
  sys.unraisablehook = unraisable_hook
  # "exception was never retrieved" for those same reads.
  std_logging.getLogger("asyncio").setLevel(std_logging.CRITICAL)


def run(main: Callable[[list[str]], int | None]) -> None:
  """absl.app.run(main) with the error handling and quiet logging described above."""
  def guarded(argv):
    _quiet_libraries()
    try:
      return main(argv)
    except NonFiniteLossError as error:
      if _VERBOSE.value:
        raise
      _fail(str(error), status=1)
    except USER_ERRORS as error:
      if _VERBOSE.value:
        raise
      _fail(_describe(error))
  app.run(guarded, flags_parser=_parse_flags)
