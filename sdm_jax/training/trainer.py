"""The training loop: resume, step, log, evaluate, checkpoint, stop on NaN.

`fit` is model-agnostic (it takes an init function, a loss and an evaluation function);
`train_lm` wires it to the pattern-string `LM` on a token stream.

Workdir layout: `config.json` (what was trained), `checkpoints/<step>/` (orbax),
`metrics.jsonl` (one JSON object per logged step).
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from sdm_jax.data.batches import eval_batches, train_batch
from sdm_jax.metrics import evaluate_bpb
from sdm_jax.models.config import LMConfig
from sdm_jax.models.lm import LM, cross_entropy
from sdm_jax.training.checkpoint import Checkpointer
from sdm_jax.training.config import TrainConfig
from sdm_jax.training.optim import learning_rate_schedule, make_optimizer
from sdm_jax.training.train_step import (TrainState, make_mesh, make_train_step, replicated,
                                         shard_batch)

CONFIG_FILE = "config.json"
METRICS_FILE = "metrics.jsonl"


class NonFiniteLossError(FloatingPointError):
  """Training produced a NaN/inf loss or gradient; the last good checkpoint is kept."""


def write_workdir_config(workdir: str, config: dict[str, Any]) -> None:
  """Writes config.json, or checks that an existing one describes the same model."""
  os.makedirs(workdir, exist_ok=True)
  path = os.path.join(workdir, CONFIG_FILE)
  if os.path.exists(path):
    with open(path) as f:
      existing = json.load(f)
    if existing.get("model") != config.get("model") or existing.get("kind") != config.get("kind"):
      raise ValueError(f"workdir {workdir} holds a run of a different model ({path}); use a new "
                       "--workdir or the same model config")
  with open(path, "w") as f:
    json.dump(config, f, indent=2, sort_keys=True)


def read_workdir_config(workdir: str, kind: str | None = None) -> dict[str, Any]:
  """The config.json of a workdir; with `kind`, ValueError unless the run is of that kind."""
  path = os.path.join(workdir, CONFIG_FILE)
  if not os.path.exists(path):
    raise ValueError(f"--workdir {workdir!r} holds no {CONFIG_FILE}: train into it first")
  with open(path) as f:
    saved = json.load(f)
  if kind is not None and saved.get("kind") != kind:
    raise ValueError(f"workdir {workdir} holds a {saved.get('kind')!r} run, not a {kind!r} run")
  return saved


def optimizer_for(config: TrainConfig):
  """The AdamW + schedule + clipping of a TrainConfig."""
  return make_optimizer(
      peak_lr=config.peak_lr, warmup_steps=config.warmup_steps, total_steps=config.steps,
      weight_decay=config.weight_decay, grad_clip=config.grad_clip, b1=config.b1, b2=config.b2,
      min_lr_ratio=config.min_lr_ratio)


def stream_batches(tokens: np.ndarray, config: TrainConfig) -> Callable[[int], np.ndarray]:
  """step -> random windows [batch_size, seq_len + 1] of a 1-D token stream, drawn as a
  pure function of (config.seed, step)."""
  return lambda step: train_batch(tokens, step=step, batch_size=config.batch_size,
                                  seq_len=config.seq_len, seed=config.seed)


def fit(*, init_params: Callable[[jax.Array], Any],
        loss_fn: Callable[[Any, jax.Array], tuple[jax.Array, dict[str, jax.Array]]],
        evaluate: Callable[[Any], dict[str, Any]],
        draw_batch: Callable[[int], np.ndarray], config: TrainConfig, workdir: str,
        log: Callable[[str], None] = print, stop_after: int | None = None) -> dict[str, Any]:
  """Trains (or resumes) until `config.steps`; returns the final summary.

  Args:
    init_params: rng -> parameters.
    loss_fn: (params, tokens [B, seq_len + 1]) -> (loss, metrics).
    evaluate: params -> dict of validation metrics (e.g. {"val_bpb": ...}).
    draw_batch: step -> the host batch of that step (leading axis config.batch_size), a
      pure function of the step so a resumed run replays exactly the batches of an
      uninterrupted one; `stream_batches` makes one for a token stream.
    config: the training settings.
    workdir: checkpoints and metrics.jsonl go here.
    log: where progress lines go.
    stop_after: stop (with a checkpoint) once this step is done, as a preemption would; the
      schedule still spans config.steps, and a later call resumes from here.

  Returns:
    {"step", "train_loss", "tokens_per_s", "step_ms", "elapsed_s", **evaluate(params)}:
    tokens_per_s and step_ms are those of the last logging interval (compilation falls in
    the first); step_ms is None when nothing was trained.
  """
  mesh = make_mesh(config.num_devices)
  optimizer = optimizer_for(config)
  state = TrainState.create(init_params(jax.random.PRNGKey(config.seed)), optimizer)
  state = jax.device_put(state, replicated(mesh))
  checkpointer = Checkpointer(workdir, max_to_keep=config.keep_checkpoints)
  if checkpointer.latest_step() is not None:
    state = checkpointer.restore(state)
    log(f"resumed from {checkpointer.directory} at step {int(state.step)}")
  train_step = make_train_step(loss_fn, optimizer, mesh)
  schedule_lr = learning_rate_schedule(config.peak_lr, config.warmup_steps, config.steps,
                                       config.min_lr_ratio)

  start_step = int(state.step)
  tokens_per_step = config.batch_size * config.seq_len
  metrics_path = os.path.join(workdir, METRICS_FILE)
  run_start = interval_start = time.perf_counter()
  interval_steps, last_loss, tokens_per_s, evaluation = 0, float("nan"), 0.0, {}
  end_step = config.steps if stop_after is None else min(stop_after, config.steps)
  with open(metrics_path, "a") as metrics_file:
    for step in range(start_step, end_step):
      state, metrics = train_step(state, shard_batch(draw_batch(step), mesh))
      interval_steps += 1
      done = step + 1
      is_last = done == end_step
      if done % config.log_every == 0 or is_last or done % config.checkpoint_every == 0:
        _check_finite(state, checkpointer)
      if done % config.log_every == 0 or is_last:
        last_loss = float(metrics["loss"])
        elapsed = time.perf_counter() - interval_start
        tokens_per_s = interval_steps * tokens_per_step / max(elapsed, 1e-9)
        record = {"step": done, "loss": last_loss, "lr": float(schedule_lr(step)),
                  "grad_norm": float(metrics["grad_norm"]), "tokens_per_s": tokens_per_s}
        metrics_file.write(json.dumps(record) + "\n")
        metrics_file.flush()
        log(f"step {done}/{config.steps} | loss {last_loss:.4f} | lr {record['lr']:.2e} | "
            f"grad_norm {record['grad_norm']:.3f} | {tokens_per_s:,.0f} tok/s")
        interval_start, interval_steps = time.perf_counter(), 0
      if config.eval_every and done % config.eval_every == 0 and not is_last:
        evaluation = evaluate(state.params)
        log(f"step {done} | " + " | ".join(f"{k} {v:.4f}" for k, v in evaluation.items()
                                           if isinstance(v, float)))
      if done % config.checkpoint_every == 0 or is_last:
        checkpointer.save(done, state)
  checkpointer.close()
  if start_step >= config.steps:
    log(f"workdir already holds step {start_step} >= steps={config.steps}: nothing to train")
  evaluation = evaluate(state.params)
  return {"step": int(state.step), "train_loss": last_loss, "tokens_per_s": tokens_per_s,
          "step_ms": 1e3 * tokens_per_step / tokens_per_s if tokens_per_s else None,
          "elapsed_s": time.perf_counter() - run_start, **evaluation}


def _check_finite(state: TrainState, checkpointer: Checkpointer) -> None:
  bad_step = int(state.first_nonfinite_step)
  if bad_step >= 0:
    raise NonFiniteLossError(
        f"non-finite loss or gradient at step {bad_step + 1}; training stopped. The last good "
        f"checkpoint (step {checkpointer.latest_step()}) under {checkpointer.directory} is "
        "left intact: lower the learning rate or check the data, then resume.")


def lm_loss_fn(model: LM) -> Callable[[Any, jax.Array], tuple[jax.Array, dict[str, jax.Array]]]:
  """Mean next-token cross-entropy: tokens [B, T + 1] -> (loss, {})."""
  def loss_fn(params, tokens: jax.Array):
    logits = model.apply(params, tokens[:, :-1])
    return jnp.mean(cross_entropy(logits, tokens[:, 1:])), {}
  return loss_fn


def lm_nll_fn(model: LM) -> Callable[[Any, jax.Array, jax.Array], jax.Array]:
  """Jitted per-token nats: (params, inputs [B, T], targets [B, T]) -> [B, T]."""
  return jax.jit(lambda params, inputs, targets: cross_entropy(model.apply(params, inputs),
                                                               targets))


def lm_evaluator(model: LM, val_tokens: np.ndarray, *, batch_size: int, seq_len: int,
                 max_tokens: int | None) -> Callable[[Any], dict[str, float]]:
  """params -> {"val_bpb", "val_tokens", "val_bytes"} on the first max_tokens validation
  targets."""
  nll = lm_nll_fn(model)

  def evaluate(params) -> dict[str, float]:
    result = evaluate_bpb(lambda inputs, targets: nll(params, inputs, targets),
                          eval_batches(val_tokens, batch_size=batch_size, seq_len=seq_len,
                                       max_tokens=max_tokens))
    return {"val_bpb": result["val_bpb"], "val_tokens": int(result["tokens"]),
            "val_bytes": int(result["bytes"])}
  return evaluate


def check_tokens_fit(tokens: np.ndarray, vocab_size: int, name: str) -> None:
  """Raises ValueError if a token stream holds ids outside [0, vocab_size)."""
  if tokens.size and int(tokens.max()) >= vocab_size:
    raise ValueError(f"{name} holds token id {int(tokens.max())} outside the model's vocabulary "
                     f"[0, {vocab_size}); raise model.vocab_size or fix the data")


def prepare_workdir(kind: str, model_config: LMConfig, train_config: TrainConfig,
                    train_tokens: np.ndarray, val_tokens: np.ndarray, workdir: str,
                    extra_config: dict[str, Any] | None = None) -> None:
  """Checks the data and sequence length against the model (an LMConfig or a subclass) and
  writes config.json: {"kind", "model", "train", **extra_config}."""
  if train_config.seq_len > model_config.max_seq_len:
    raise ValueError(f"TrainConfig.seq_len ({train_config.seq_len}) exceeds the model's "
                     f"max_seq_len ({model_config.max_seq_len})")
  check_tokens_fit(train_tokens, model_config.vocab_size, "the training data")
  check_tokens_fit(val_tokens, model_config.vocab_size, "the validation data")
  write_workdir_config(workdir, {"kind": kind, "model": model_config.to_dict(),
                                 "train": dataclasses.asdict(train_config),
                                 **(extra_config or {})})


def train_lm(model_config: LMConfig, train_config: TrainConfig, train_tokens: np.ndarray,
             val_tokens: np.ndarray, workdir: str, *, extra_config: dict[str, Any] | None = None,
             log: Callable[[str], None] = print, stop_after: int | None = None
             ) -> dict[str, Any]:
  """Trains an `LM` on a token stream; see `fit`. Writes config.json to the workdir."""
  prepare_workdir("lm", model_config, train_config, train_tokens, val_tokens, workdir,
                  extra_config)
  model = LM(model_config)
  sample = jnp.zeros((1, train_config.seq_len), jnp.int32)
  return fit(init_params=lambda rng: model.init(rng, sample),
             loss_fn=lm_loss_fn(model),
             evaluate=lm_evaluator(model, val_tokens, batch_size=train_config.eval_batch_size,
                                   seq_len=train_config.seq_len,
                                   max_tokens=train_config.eval_tokens),
             draw_batch=stream_batches(train_tokens, train_config), config=train_config,
             workdir=workdir, log=log, stop_after=stop_after)


def load_lm(workdir: str, step: int | None = None):
  """Rebuilds the model of a workdir and restores its parameters.

  Returns (model, params, workdir_config, step) for checkpoint `step` (latest by default).
  """
  saved = read_workdir_config(workdir, kind="lm")
  model_config = LMConfig.from_dict(saved["model"])
  train_config = TrainConfig.from_dict(saved["train"])
  model = LM(model_config)
  sample = jnp.zeros((1, train_config.seq_len), jnp.int32)
  params, step = restore_params(workdir, lambda rng: model.init(rng, sample), train_config, step)
  return model, params, saved, step


def restore_params(workdir: str, init_params: Callable[[jax.Array], Any],
                   train_config: TrainConfig, step: int | None = None) -> tuple[Any, int]:
  """The parameters of checkpoint `step` (latest by default) under a workdir, on one device.

  `init_params` (rng -> parameters) and `train_config` (its optimizer) describe the saved
  TrainState; only their shapes are used. Returns (params, step).
  """
  optimizer = optimizer_for(train_config)
  abstract = jax.eval_shape(
      lambda: TrainState.create(init_params(jax.random.PRNGKey(0)), optimizer))
  sharding = replicated(make_mesh(1))
  abstract = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding),
                          abstract)
  checkpointer = Checkpointer(workdir)
  try:
    state = checkpointer.restore(abstract, step)
  finally:
    checkpointer.close()
  return state.params, int(state.step)
