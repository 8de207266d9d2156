"""The generic training loop: resume, step, log, evaluate, checkpoint, stop on NaN, on a
signal or when a stop rule (`plateau.PlateauRule`) says the loss has stopped improving.

`fit` takes an init function, a loss, an evaluation function and a batch source, so any
model trains with it (`lm_training.train_lm`, `maglev_jax.training.train_maglev`,
`recall.train_recall`). It writes `checkpoints/<step>/` (orbax), `metrics.jsonl` (one JSON
object per logged step: the loss, the loss function's own metrics, learning rate, gradient
norm, throughput) and `summary.json` under the workdir (`records`).

Preemption: SIGTERM (how clusters stop a job) or SIGINT (Ctrl-C) during training lets the
current step finish, saves a checkpoint at it and returns a summary with `stopped_by` set;
the same call later resumes there. A damaged newest checkpoint is skipped with a warning
(`Checkpointer.restore`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from typing import Any, Callable, Iterator, NamedTuple, Sequence

import jax
import numpy as np

from sdm_jax.data.batches import train_batch
from sdm_jax.sharding import make_mesh, mesh_sizes
from sdm_jax.training import records
from sdm_jax.training.checkpoint import Checkpointer
from sdm_jax.training.config import TrainConfig
from sdm_jax.training.optim import learning_rate_schedule, optimizer_for
from sdm_jax.training.train_step import (TrainState, init_state, make_train_step, shard_batch,
                                         tree_bytes)

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
# What the train step adds to a loss_fn's own metrics; the rest (the loss's terms, e.g.
# Maglev's "ce" and "memory_loss") go to metrics.jsonl beside the loss.
_STEP_METRICS = ("loss", "grad_norm", "finite")


@contextlib.contextmanager
def _stop_requests() -> Iterator[list[str]]:
  """Within the block, SIGINT and SIGTERM append their name to the yielded list instead of
  stopping the process (main thread only; elsewhere the list stays empty). A second
  SIGINT interrupts at once, for a step that hangs."""
  requests: list[str] = []
  if threading.current_thread() is not threading.main_thread():
    yield requests
    return

  def request(signum, frame):
    del frame
    name = signal.Signals(signum).name
    if signum == signal.SIGINT and requests:
      raise KeyboardInterrupt
    requests.append(name)

  previous = {sig: signal.signal(sig, request) for sig in STOP_SIGNALS}
  try:
    yield requests
  finally:
    for sig, handler in previous.items():
      signal.signal(sig, handler)


class NonFiniteLossError(FloatingPointError):
  """Training produced a NaN/inf loss or gradient; the last good checkpoint is kept."""


class FitResult(NamedTuple):
  """What `fit` returns: the final train state and the run's summary."""
  state: TrainState
  summary: dict[str, Any]


def stream_batches(tokens: np.ndarray, config: TrainConfig) -> Callable[[int], np.ndarray]:
  """step -> random windows [batch_size, seq_len + 1] of a 1-D token stream, drawn as a
  pure function of (config.seed, step)."""
  return lambda step: train_batch(tokens, step=step, batch_size=config.batch_size,
                                  seq_len=config.seq_len, seed=config.seed)


def fit(*, init_params: Callable[[jax.Array], Any],
        loss_fn: Callable[[Any, jax.Array], tuple[jax.Array, dict[str, jax.Array]]],
        evaluate: Callable[[Any], dict[str, Any]],
        draw_batch: Callable[[int], np.ndarray], config: TrainConfig, workdir: str,
        log: Callable[[str], None] = print, stop_after: int | None = None,
        stop_rule: Callable[[Sequence[tuple[int, float]]], str | None] | None = None
        ) -> FitResult:
  """Trains (or resumes) until `config.steps`; returns the final state and summary.

  Args:
    init_params: rng -> parameters.
    loss_fn: (params, tokens [B, seq_len + 1]) -> (loss, metrics): scalar metrics (the
      loss's terms) logged with the loss at every logged step.
    evaluate: params -> dict of validation metrics (e.g. {"val_bpb": ...}).
    draw_batch: step -> the host batch of that step (leading axis config.batch_size), a
      pure function of the step so a resumed run replays exactly the batches of an
      uninterrupted one; `stream_batches` makes one for a token stream.
    config: the training settings.
    workdir: checkpoints and metrics.jsonl go here.
    log: where progress lines go.
    stop_after: stop (with a checkpoint) once this step is done, as a preemption would; the
      schedule still spans config.steps, and a later call resumes from here.
    stop_rule: called after each logged step with the (step, loss) pairs logged so far
      (those of metrics.jsonl before a resume included); a reason string stops training
      there, with a checkpoint, and evaluates as at the end (`plateau.PlateauRule`). A
      resumed run whose history already satisfies it trains no further.

  Returns:
    FitResult: the final `TrainState` (sharded over the mesh, `train_step.state_shardings`)
    and the summary {"step", "train_loss", "tokens_per_s", "step_ms", "elapsed_s",
    "stopped_by", "stopped_by_rule", "mesh", "param_bytes", "param_bytes_per_device",
    **evaluate(params)}:
    tokens_per_s and step_ms are those of the last logging interval (compilation falls in
    the first); step_ms is None when nothing was trained; stopped_by is "SIGTERM" or
    "SIGINT" when a signal stopped training early (then nothing is evaluated), else None;
    stopped_by_rule the reason `stop_rule` gave where it ended training (at the last step
    too), else None;
    mesh the axis sizes {"data", "fsdp", "model"}; param_bytes_per_device the parameter
    bytes one device holds. The summary is also written to summary.json.

  The mesh is `config.mesh` over `config.num_devices` (`sdm_jax.sharding.make_mesh`). With
  several processes (`training.distributed`) every process calls `fit` alike; only process
  0 logs and writes metrics.jsonl and summary.json.
  """
  mesh = make_mesh(config.mesh, num_devices=config.num_devices)
  primary = jax.process_index() == 0
  if not primary:
    log = lambda line: None  # noqa: E731 - one process speaks for the run
  optimizer = optimizer_for(config)
  # A checkpoint restores into these shardings whatever mesh it was saved from.
  state, shardings = init_state(init_params, optimizer, mesh, jax.random.PRNGKey(config.seed))
  checkpointer = Checkpointer(workdir, max_to_keep=config.keep_checkpoints)
  if checkpointer.latest_step() is not None:
    state = checkpointer.restore(state)
    for damaged in checkpointer.damaged_steps:  # this run will write those steps again
      checkpointer.delete(damaged)
    log(f"resumed from {checkpointer.directory} at step {int(state.step)}")
  train_step = make_train_step(loss_fn, optimizer, mesh, shardings)
  param_bytes, param_bytes_per_device = tree_bytes(state.params)

  def run_evaluation(params) -> dict[str, Any]:
    with jax.set_mesh(mesh):  # the layers split their ops as in training
      return evaluate(params)
  schedule_lr = learning_rate_schedule(config.peak_lr, config.warmup_steps, config.steps,
                                       config.min_lr_ratio)

  start_step = int(state.step)
  if primary:
    records.keep_metrics_through(workdir, start_step)
  tokens_per_step = config.batch_size * config.seq_len
  metrics_path = os.path.join(workdir, records.METRICS_FILE)
  run_start = interval_start = time.perf_counter()
  interval_steps, last_loss, tokens_per_s, evaluation = 0, float("nan"), 0.0, {}
  end_step = config.steps if stop_after is None else min(stop_after, config.steps)
  stopped_by = None
  loss_history = [(record["step"], record["loss"]) for record in records.read_metrics(workdir)
                  if record.get("step", start_step + 1) <= start_step
                  and record.get("loss") is not None] if stop_rule is not None else []
  stopped_by_rule = stop_rule(loss_history) if loss_history else None
  if stopped_by_rule is not None:
    log(f"the stop rule already holds at step {start_step} ({stopped_by_rule}): nothing to "
        "train")
    end_step, last_loss = start_step, loss_history[-1][1]
  with (open(metrics_path, "a") if primary else open(os.devnull, "w")) as metrics_file, \
      _stop_requests() as stop_requests:
    for step in range(start_step, end_step):
      state, metrics = train_step(state, shard_batch(draw_batch(step), mesh))
      interval_steps += 1
      done = step + 1
      stopped_by = stop_requests[0] if stop_requests else None
      is_last = done == end_step or stopped_by is not None
      if done % config.log_every == 0 or is_last or done % config.checkpoint_every == 0:
        _check_finite(state, checkpointer)
      if done % config.log_every == 0 or is_last:
        last_loss = float(metrics["loss"])
        elapsed = time.perf_counter() - interval_start
        tokens_per_s = interval_steps * tokens_per_step / max(elapsed, 1e-9)
        terms = {name: float(value) for name, value in metrics.items()
                 if name not in _STEP_METRICS}
        record = {"step": done, "loss": last_loss, **terms, "lr": float(schedule_lr(step)),
                  "grad_norm": float(metrics["grad_norm"]), "tokens_per_s": tokens_per_s}
        metrics_file.write(records.dumps(record) + "\n")
        metrics_file.flush()
        eta_s = (end_step - done) * tokens_per_step / max(tokens_per_s, 1e-9)
        log(f"step {done}/{config.steps} | loss {last_loss:.4f} | "
            + "".join(f"{name} {value:.4f} | " for name, value in terms.items())
            + f"lr {record['lr']:.2e} | grad_norm {record['grad_norm']:.3f} | "
            f"{tokens_per_s:,.0f} tok/s | eta {_duration(eta_s)}")
        interval_start, interval_steps = time.perf_counter(), 0
        if stop_rule is not None:
          loss_history.append((done, last_loss))
          stopped_by_rule = stop_rule(loss_history)
          is_last = is_last or stopped_by_rule is not None
      if config.eval_every and done % config.eval_every == 0 and not is_last:
        evaluation = run_evaluation(state.params)
        log(f"step {done} | " + " | ".join(f"{k} {v:.4f}" for k, v in evaluation.items()
                                           if isinstance(v, float)))
      if done % config.checkpoint_every == 0 or is_last:
        checkpointer.save(done, state)
      if stopped_by is not None:
        log(f"{stopped_by}: stopped after step {done}, checkpoint saved under "
            f"{checkpointer.directory}; the same command resumes from it")
        break
      if stopped_by_rule is not None:
        log(f"stop rule: {stopped_by_rule} at step {done} of {config.steps}")
        break
  checkpointer.close()
  if start_step >= config.steps:
    log(f"workdir already holds step {start_step} >= steps={config.steps}: nothing to train")
  evaluation = {} if stopped_by else run_evaluation(state.params)
  summary = {"step": int(state.step), "train_loss": last_loss, "tokens_per_s": tokens_per_s,
             "step_ms": 1e3 * tokens_per_step / tokens_per_s if tokens_per_s else None,
             "elapsed_s": time.perf_counter() - run_start, "stopped_by": stopped_by,
             "stopped_by_rule": stopped_by_rule,
             "mesh": mesh_sizes(mesh), "param_bytes": param_bytes,
             "param_bytes_per_device": param_bytes_per_device, **evaluation}
  if primary:
    records.write_summary(workdir, summary)
  return FitResult(state=state, summary=summary)


def _duration(seconds: float) -> str:
  seconds = int(round(seconds))
  hours, rest = divmod(seconds, 3600)
  return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


def _check_finite(state: TrainState, checkpointer: Checkpointer) -> None:
  bad_step = int(state.first_nonfinite_step)
  if bad_step >= 0:
    raise NonFiniteLossError(
        f"non-finite loss or gradient at step {bad_step + 1}; training stopped. The last good "
        f"checkpoint (step {checkpointer.latest_step()}) under {checkpointer.directory} is "
        "left intact: lower the learning rate or check the data, then resume.")
