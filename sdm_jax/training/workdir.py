"""Run directories: `config.json` (what was trained, with its kind), the data checks made
before writing it, and restoring parameters from a directory's checkpoints."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, Callable

import jax
import numpy as np

from sdm_jax.models.config import LMConfig
from sdm_jax.sharding import make_mesh
from sdm_jax.training.checkpoint import Checkpointer
from sdm_jax.training.config import TrainConfig
from sdm_jax.training.optim import optimizer_for
from sdm_jax.training.train_step import TrainState, replicated

CONFIG_FILE = "config.json"


def write_workdir_config(workdir: str, config: dict[str, Any]) -> None:
  """Writes config.json, or checks that an existing one describes the same model.

  With several processes every one checks and only process 0 writes; the write replaces
  the file whole, so a process reading meanwhile sees the old or the new file.
  """
  os.makedirs(workdir, exist_ok=True)
  path = os.path.join(workdir, CONFIG_FILE)
  if os.path.exists(path):
    with open(path) as f:
      existing = json.load(f)
    if existing.get("model") != config.get("model") or existing.get("kind") != config.get("kind"):
      raise ValueError(f"workdir {workdir} holds a run of a different model ({path}); use a new "
                       "--workdir or the same model config")
  if jax.process_index() == 0:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
      json.dump(config, f, indent=2, sort_keys=True)
    os.replace(tmp, path)


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


def restore_params(workdir: str, init_params: Callable[[jax.Array], Any],
                   train_config: TrainConfig, step: int | None = None) -> tuple[Any, int]:
  """The parameters of checkpoint `step` (latest by default) under a workdir, on one device.

  `init_params` (rng -> parameters) and `train_config` (its optimizer) describe the saved
  TrainState; only their shapes are used. Returns (params, step).
  """
  optimizer = optimizer_for(train_config)
  abstract = jax.eval_shape(
      lambda: TrainState.create(init_params(jax.random.PRNGKey(0)), optimizer))
  sharding = replicated(make_mesh(num_devices=1))
  abstract = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding),
                          abstract)
  checkpointer = Checkpointer(workdir)
  try:
    state = checkpointer.restore(abstract, step)
  finally:
    checkpointer.close()
  return state.params, int(state.step)
