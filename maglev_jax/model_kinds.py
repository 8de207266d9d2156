"""The kinds of model, picked by the "kind" field of an experiment config and of a
workdir's config.json: "lm" (the pattern-string LM of `sdm_jax`) and "maglev". For each,
what to call to train, load, evaluate, describe and sample it (`ModelKind`).

It lives in maglev_jax, the top library layer, because it names both kinds (sdm_jax may
not import maglev_jax); a new kind is one more entry in `KINDS`."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from maglev_jax import describe as maglev_describe
from maglev_jax.config import MaglevConfig
from maglev_jax.evaluation import maglev_evaluator
from maglev_jax.inference import generate as maglev_generate
from maglev_jax.training import load_maglev, train_maglev
from sdm_jax.models import describe as lm_describe
from sdm_jax.models.config import LMConfig
from sdm_jax.models.generate import generate as lm_generate
from sdm_jax.training.lm_training import load_lm, lm_evaluator, train_lm
from sdm_jax.training.workdir import read_workdir_config


@dataclasses.dataclass(frozen=True)
class ModelKind:
  """What the entry points and notebooks call for one kind of model.

  Attributes:
    config_class: the model config (LMConfig or a subclass), built with `from_dict`.
    train: (model_config, train_config, train_tokens, val_tokens, workdir, *,
      extra_config, token_bytes, log) -> summary dict with "val_bpb".
    load: (workdir, step=None) -> (model, params, workdir_config, step).
    evaluator: (model, val_tokens, *, batch_size, seq_len, max_tokens, token_bytes,
      bucket_width=None) -> (params -> dict with "val_bpb"). token_bytes: [vocab] bytes
      per id, or None when they are unknown (then "val_bpb" is None and
      "val_bpb_unavailable" says why). bucket_width: also the same metrics per position
      bucket of the windows, under "by_position" (`sdm_jax.metrics.evaluate_validation`).
    describe: (model_config, context_len) -> JSON-ready dict.
    generate: (model, params, prompt, *, steps, temperature, top_k, seed) -> ids [B, steps].
  """

  config_class: type[LMConfig]
  train: Callable[..., dict[str, Any]]
  load: Callable[..., tuple]
  evaluator: Callable[..., Callable[[Any], dict[str, Any]]]
  describe: Callable[..., dict[str, Any]]
  generate: Callable[..., Any]


KINDS: dict[str, ModelKind] = {
    "lm": ModelKind(LMConfig, train_lm, load_lm, lm_evaluator, lm_describe.describe,
                    lm_generate),
    "maglev": ModelKind(MaglevConfig, train_maglev, load_maglev, maglev_evaluator,
                        maglev_describe.describe, maglev_generate),
}


def kind_named(name: str) -> ModelKind:
  if name not in KINDS:
    raise ValueError(f"model kind must be one of {sorted(KINDS)}, got {name!r}")
  return KINDS[name]


def kind_of_workdir(workdir: str) -> ModelKind:
  """The kind of the run saved in `workdir` (its config.json; "lm" when absent)."""
  return kind_named(read_workdir_config(workdir).get("kind", "lm"))
