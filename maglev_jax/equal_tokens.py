"""Training several models for equal tokens and comparing them: the library behind
`experiments.compare` and `experiments.maglev_compare`.

Every run is trained on the same data split for the same steps, batch and sequence length
(so the same tokens), then evaluated on the same validation targets. Each model's result
holds `fit`'s summary (val BPB, final train loss), the wall time, the steady step time
(the last logging interval, compilation excluded), its parameter counts and the `describe`
report of its kind (parameters split by part, recurrent/cache state per sequence at the
training length, FLOPs per token). On ids whose bytes are unknown (no tokenizer, no
data.token_bytes) the models are compared by `val_loss` (nats per token).

A `Run` holds a model kind and typed configs; `experiments.common.build_runs` makes them
from named experiment configs. It lives in maglev_jax because a run may be of either kind
(`model_kinds`).
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from typing import Any, Callable, Iterable

import jax
import numpy as np

from maglev_jax import model_kinds
from sdm_jax.metrics import BPB_UNAVAILABLE, unigram_bits_per_byte
from sdm_jax.models.config import LMConfig
from sdm_jax.training.config import DataConfig, TrainConfig
from sdm_jax.training.run_data import Data


@dataclasses.dataclass(frozen=True)
class Run:
  """One model to train: its kind and its model, training and data configs."""
  kind: model_kinds.ModelKind
  model: LMConfig
  train: TrainConfig
  data: DataConfig


def check_equal_tokens(settings: Iterable[tuple[TrainConfig, DataConfig]]) -> DataConfig:
  """The data config shared by runs of these (train, data) settings.

  Raises:
    ValueError: unless they train for equal tokens (steps, batch, seq_len) of the same data
      and evaluate on the same targets (eval_tokens).
  """
  seen = {(train.steps, train.batch_size, train.seq_len, train.eval_tokens, data)
          for train, data in settings}
  if len(seen) != 1:
    raise ValueError(f"the configs must train for equal tokens on the same data and evaluate "
                     f"on the same targets; got (steps, batch, seq_len, eval_tokens, data) "
                     f"{seen}")
  return next(iter(seen))[-1]


def parameter_total(params) -> int:
  return sum(int(np.prod(x.shape)) for x in jax.tree.leaves(params))


def train_run(name: str, run: Run, *, workdir: str, data: Data,
              log: Callable[[str], None] = print) -> tuple[dict[str, Any], Any, Any]:
  """Trains (or resumes) one run on `data` into `workdir`; returns (result, model, params).

  result: `fit`'s summary (with "step_ms", the steady step time) plus "wall_s",
  "parameters_total" and "describe" (the kind's report at the training length).
  """
  log(f"== training {name} ({type(run.model).__name__}) for {run.train.steps} steps")
  start = time.perf_counter()
  result = run.kind.train(run.model, run.train, data.train, data.val, workdir,
                          extra_config={"name": name, "data": dataclasses.asdict(run.data)},
                          token_bytes=data.token_bytes, log=lambda line: log(f"  {line}"))
  result["wall_s"] = time.perf_counter() - start
  model, params, _, _ = run.kind.load(workdir)
  result["parameters_total"] = parameter_total(params)
  result["describe"] = run.kind.describe(run.model, run.train.seq_len)
  return result, model, params


def compare(runs: dict[str, Run], data: Data, *, workdir_root: str | None = None,
            after_training: Callable[..., dict[str, Any] | None] | None = None,
            log: Callable[[str], None] = print) -> dict[str, Any]:
  """Trains every run for equal tokens and evaluates it; returns the JSON summary.

  Args:
    runs: {name: Run}, all at equal tokens of the same data (`check_equal_tokens`).
    data: the data of their data config, loaded (`sdm_jax.training.run_data.load_data`).
    workdir_root: workdirs go to <root>/<name> (default: a new temporary directory);
      finished runs found there are resumed, i.e. only evaluated.
    after_training: (name, run, model, params, val_tokens) -> extra results stored under
      summary["extra"][name] (e.g. Maglev's prefill timing), or None.
    log: where progress lines go.

  Returns:
    {"device", "steps", "tokens_per_model", "unigram_bpb", "workdir_root",
     "models": {name: result of `train_run`}, "extra": {name: ...}}, and "stopped_by"
    when a signal stopped a run (the models trained before it are in "models").
  """
  if not runs:
    raise ValueError("runs must hold at least one run to train")
  check_equal_tokens((run.train, run.data) for run in runs.values())
  workdir_root = workdir_root or tempfile.mkdtemp(prefix="compare_")
  first = next(iter(runs.values()))
  unigram_bpb = None if data.token_bytes is None else unigram_bits_per_byte(
      data.train, data.val, first.model.vocab_size, token_bytes=data.token_bytes)
  summary: dict[str, Any] = {
      "device": jax.devices()[0].device_kind, "steps": first.train.steps,
      "tokens_per_model": first.train.steps * first.train.batch_size * first.train.seq_len,
      "unigram_bpb": unigram_bpb, "workdir_root": workdir_root, "models": {}, "extra": {}}
  if data.token_bytes is None:
    summary["bpb_unavailable"] = BPB_UNAVAILABLE
  for name, run in runs.items():
    result, model, params = train_run(name, run, workdir=os.path.join(workdir_root, name),
                                      data=data, log=log)
    if result.get("stopped_by"):  # SIGTERM/SIGINT: this run saved its step; stop here
      summary["stopped_by"] = result["stopped_by"]
      log(f"  {name}: {result['stopped_by']} at step {result['step']}; rerun with "
          f"--workdir_root={workdir_root} to resume")
      break
    summary["models"][name] = result
    metric = headline_metric(summary)
    log(f"  {name}: {metric} {result[metric]:.4f}, {result['wall_s']:.1f} s")
    if after_training is not None:
      extra = after_training(name, run, model, params, data.val)
      if extra is not None:
        summary["extra"][name] = extra
  return summary


def _state_bytes(report: dict[str, Any]) -> int | None:
  for key in ("decode_state_bytes_per_sequence", "inference_state_bytes_per_sequence"):
    if key in report:
      return report[key]["total"]
  return None


def headline_metric(summary: dict[str, Any]) -> str:
  """"val_bpb", or "val_loss" (nats per token) where the bytes per token are unknown."""
  return "val_loss" if "bpb_unavailable" in summary else "val_bpb"


def run_line(summary: dict[str, Any]) -> str:
  """The first line of a table: device, steps, tokens per model and the unigram BPB (or
  why there is no BPB)."""
  baseline = (f"BPB not reported ({summary['bpb_unavailable']}); val_loss in nats per token"
              if "bpb_unavailable" in summary else f"unigram BPB {summary['unigram_bpb']:.4f}")
  return (f"{summary['device']}: {summary['steps']} steps, {summary['tokens_per_model']:,} "
          f"tokens per model; {baseline}")


def format_table(summary: dict[str, Any]) -> str:
  """Val BPB (or loss), step time, parameters (non-memory and M0 apart where the kind
  reports them) and state per sequence of every model in a `compare` summary."""
  metric = headline_metric(summary)
  lines = [run_line(summary),
           f"{'model':<22} {metric:>8} {'step_ms':>8} {'train_s':>8} {'params':>11} "
           f"{'non_memory':>11} {'m0':>11} {'state/seq':>12}"]
  number = lambda value: "-" if value is None else f"{value:,}"  # noqa: E731
  for name, result in summary["models"].items():
    report = result["describe"]
    parameters = report.get("parameters", {})
    step_ms = "-" if result["step_ms"] is None else f"{result['step_ms']:.1f}"
    lines.append(f"{name:<22} {result[metric]:>8.4f} {step_ms:>8} "
                 f"{result['wall_s']:>8.1f} {result['parameters_total']:>11,} "
                 f"{number(parameters.get('non_memory')):>11} "
                 f"{number(parameters.get('memory_m0')):>11} "
                 f"{number(_state_bytes(report)):>12}")
  return "\n".join(lines)
