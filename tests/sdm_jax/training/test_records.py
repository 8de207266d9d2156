"""metrics.jsonl and summary.json: valid JSON always, one line per logged step."""

from __future__ import annotations

import json
import math

import jax.numpy as jnp
import numpy as np

from sdm_jax.training import records


def test_json_safe_turns_non_finite_numbers_into_null():
  value = {"loss": float("nan"), "norms": [1.5, float("inf"), -float("inf")],
           "step": np.int32(3), "lr": jnp.float32(0.5), "nested": ({"x": np.float64("nan")},)}
  assert records.json_safe(value) == {"loss": None, "norms": [1.5, None, None], "step": 3,
                                      "lr": 0.5, "nested": [{"x": None}]}
  assert json.loads(records.dumps({"a": math.nan})) == {"a": None}


def test_metrics_keep_one_line_per_step_through_a_resume(tmp_path):
  path = tmp_path / records.METRICS_FILE
  lines = [json.dumps({"step": s, "loss": 1.0 / s}) for s in (1, 2, 3, 4, 5)]
  path.write_text("\n".join(lines) + "\n" + '{"step": 6, "lo')  # a kill cut the last line
  records.keep_metrics_through(str(tmp_path), 3)
  assert [json.loads(line)["step"] for line in path.read_text().splitlines()] == [1, 2, 3]
  records.keep_metrics_through(str(tmp_path / "elsewhere"), 3)  # no file: nothing to do


def test_read_metrics_skips_a_cut_line(tmp_path):
  path = tmp_path / records.METRICS_FILE
  path.write_text('{"step": 1, "loss": 2.5}\n{"step": 2, "loss": 2.25}\n{"step": 3, "lo')
  assert records.read_metrics(str(tmp_path)) == [{"step": 1, "loss": 2.5},
                                                 {"step": 2, "loss": 2.25}]
  assert records.read_metrics(str(tmp_path / "elsewhere")) == []


def test_summary_is_written_as_valid_json(tmp_path):
  path = records.write_summary(str(tmp_path), {"train_loss": float("nan"), "step": 2})
  assert json.loads(open(path).read()) == {"step": 2, "train_loss": None}


def test_last_metrics_is_the_last_complete_line(tmp_path):
  assert records.last_metrics(str(tmp_path)) is None
  path = tmp_path / records.METRICS_FILE
  path.write_text(json.dumps({"step": 1, "ce": 2.5}) + "\n" + json.dumps({"step": 2, "ce": 2.25})
                  + "\n" + '{"step": 3, "c')
  assert records.last_metrics(str(tmp_path)) == {"step": 2, "ce": 2.25}
