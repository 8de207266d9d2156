"""What a run leaves besides checkpoints: `metrics.jsonl` (one JSON object per logged step)
and `summary.json`, always valid JSON (NaN and infinities become null)."""

from __future__ import annotations

import json
import math
import os
from typing import Any

METRICS_FILE = "metrics.jsonl"
SUMMARY_FILE = "summary.json"


def json_safe(value: Any) -> Any:
  """`value` with every non-finite float replaced by None (JSON has no NaN or Infinity),
  through dicts, lists and tuples; numpy and JAX scalars become Python numbers."""
  if isinstance(value, dict):
    return {key: json_safe(item) for key, item in value.items()}
  if isinstance(value, (list, tuple)):
    return [json_safe(item) for item in value]
  if hasattr(value, "item") and getattr(value, "ndim", None) == 0:
    value = value.item()
  if isinstance(value, float) and not math.isfinite(value):
    return None
  return value


def dumps(value: Any, **kwargs) -> str:
  """json.dumps of `json_safe(value)`; refuses NaN instead of writing invalid JSON."""
  return json.dumps(json_safe(value), allow_nan=False, **kwargs)


def _metric_records(path: str):
  """(line, record) of each JSON object line of the metrics file at `path`; a line cut
  short by a kill is skipped."""
  with open(path) as f:
    for line in f:
      try:
        record = json.loads(line)
      except json.JSONDecodeError:
        continue
      if isinstance(record, dict):
        yield line, record


def read_metrics(workdir: str) -> list[dict[str, Any]]:
  """The records of the workdir's metrics.jsonl in file order ([] without the file); a line
  cut short by a kill is skipped."""
  path = os.path.join(workdir, METRICS_FILE)
  if not os.path.exists(path):
    return []
  return [record for _, record in _metric_records(path)]


def keep_metrics_through(workdir: str, step: int) -> None:
  """Drops the lines of metrics.jsonl logged after `step`: a run resumed at `step` redoes
  those steps and logs them again, so each logged step keeps exactly one line. A line cut
  short by a kill is dropped too."""
  path = os.path.join(workdir, METRICS_FILE)
  if not os.path.exists(path):
    return
  kept = [line if line.endswith("\n") else line + "\n"
          for line, record in _metric_records(path) if record.get("step", step + 1) <= step]
  write_atomically(path, "".join(kept))


def last_metrics(workdir: str) -> dict[str, Any] | None:
  """The last complete record of metrics.jsonl (the last logged step), or None if none."""
  path = os.path.join(workdir, METRICS_FILE)
  if not os.path.exists(path):
    return None
  last = None
  for _, record in _metric_records(path):
    last = record
  return last


def write_summary(workdir: str, summary: dict[str, Any]) -> str:
  """Writes summary.json (atomically); returns its path."""
  path = os.path.join(workdir, SUMMARY_FILE)
  write_json(path, summary, sort_keys=True)
  return path


def write_atomically(path: str, text: str) -> None:
  """Writes `text` to `path` through a temporary file: a kill never leaves half a file."""
  tmp = path + ".tmp"
  with open(tmp, "w") as f:
    f.write(text)
  os.replace(tmp, path)


def write_json(path: str, value: Any, **kwargs) -> None:
  """`dumps(value, indent=1, **kwargs)` and a newline to `path`, atomically."""
  write_atomically(path, dumps(value, indent=1, **kwargs) + "\n")


def read_record_list(path: str, what: str) -> list[dict[str, Any]]:
  """The JSON list of records (objects) in `path`, [] when it does not exist yet; a
  ValueError naming `what` the file should be otherwise."""
  if not os.path.exists(path):
    return []
  with open(path) as f:
    loaded = json.load(f)
  if not isinstance(loaded, list) or not all(isinstance(r, dict) for r in loaded):
    raise ValueError(f"{path} must hold a JSON list of run records ({what})")
  return loaded
