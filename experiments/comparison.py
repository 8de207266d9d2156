"""Training named configs for equal tokens and comparing them: the library behind
`experiments.compare` and `experiments.maglev_comparison` (importable without flags).

Every config is trained on the same data split for the same steps, batch and sequence
length (so the same tokens), then evaluated on the same validation targets. Each model's
result holds `fit`'s summary (val BPB, final train loss), the wall time, the steady
step time (the last logging interval, compilation excluded), its parameter counts and the
`describe` report of its kind (parameters split by part, recurrent/cache state per
sequence at the training length, FLOPs per token). On ids whose bytes are unknown (no
tokenizer, no data.token_bytes) the models are compared by `val_loss` (nats per token).
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from typing import Any, Callable, Sequence

import jax
import numpy as np

from experiments import common
from experiments import configs
from maglev_jax import model_kinds
from sdm_jax.metrics import BPB_UNAVAILABLE, unigram_bits_per_byte
from sdm_jax.models.config import LMConfig
from sdm_jax.training.config import DataConfig, TrainConfig
from sdm_jax.training.run_data import Data, load_data


@dataclasses.dataclass(frozen=True)
class Run:
  """One config to train: its model kind and its three settings."""
  kind: model_kinds.ModelKind
  model: LMConfig
  train: TrainConfig
  data: DataConfig


def build_runs(config_names: Sequence[str], *, steps: int | None = None,
               model_overrides: dict[str, Any] | None = None,
               train_overrides: dict[str, Any] | None = None,
               data_overrides: dict[str, Any] | None = None
               ) -> tuple[dict[str, Run], Data]:
  """({config name: Run}, the data they share) with the overrides applied to every config.
  The data is loaded once, after the checks; model vocabularies left unset follow it.

  Raises:
    ValueError: no or repeated names, or configs that would not train on equal tokens of
      the same data and evaluate on the same targets.
  """
  if not config_names or len(set(config_names)) != len(config_names):
    raise ValueError(f"configs must be a non-empty list of distinct config names, got "
                     f"{list(config_names)}")
  experiment_configs = {}
  for name in config_names:
    config = configs.get_config(name)
    config.model.update(model_overrides or {})
    config.train.update(train_overrides or {})
    config.data.update(data_overrides or {})
    if steps is not None:
      config.train.update(steps=steps, checkpoint_every=steps)
      common.override_steps(config, steps)
    experiment_configs[config.name] = config
  seen = set()
  for config in experiment_configs.values():
    train = TrainConfig.from_dict(common.to_plain(config.train))
    seen.add((train.steps, train.batch_size, train.seq_len, train.eval_tokens,
              common.data_config_of(config)))
  if len(seen) != 1:
    raise ValueError(f"the configs must train for equal tokens on the same data and evaluate "
                     f"on the same targets; got (steps, batch, seq_len, eval_tokens, data) "
                     f"{seen}")
  data = load_data(next(iter(seen))[-1])
  runs = {name: Run(model_kinds.kind_named(config.kind), *common.lm_configs(config, data))
          for name, config in experiment_configs.items()}
  return runs, data


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


def compare(config_names: Sequence[str], *, steps: int | None = None,
            workdir_root: str | None = None,
            model_overrides: dict[str, Any] | None = None,
            train_overrides: dict[str, Any] | None = None,
            data_overrides: dict[str, Any] | None = None,
            after_training: Callable[..., dict[str, Any] | None] | None = None,
            log: Callable[[str], None] = print) -> dict[str, Any]:
  """Trains every config for equal tokens and evaluates it; returns the JSON summary.

  Args:
    config_names: names under experiments/configs.
    steps, model_overrides, train_overrides, data_overrides: applied to every config (the
      overrides as fields of its model, train and data sections).
    workdir_root: workdirs go to <root>/<config name> (default: a new temporary directory);
      finished runs found there are resumed, i.e. only evaluated.
    after_training: (name, run, model, params, val_tokens) -> extra results stored under
      summary["extra"][name] (e.g. Maglev's prefill timing), or None.
    log: where progress lines go.

  Returns:
    {"device", "steps", "tokens_per_model", "unigram_bpb", "workdir_root",
     "models": {name: result of `train_run`}, "extra": {name: ...}}, and "stopped_by"
    when a signal stopped a run (the models trained before it are in "models").
  """
  runs, data = build_runs(config_names, steps=steps, model_overrides=model_overrides,
                          train_overrides=train_overrides, data_overrides=data_overrides)
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
