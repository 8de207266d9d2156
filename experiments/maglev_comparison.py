"""Maglev against its baselines at equal tokens, and fixed-point against recurrent prefill:
the library behind `experiments.maglev_compare` (importable without defining flags).

`compare` trains `maglev_<size>_swa`, `maglev_<size>_slsl`, `maglev_<size>` and
`maglev_<size>_shared` for the same steps (hence tokens), evaluates each on the same
validation targets (Maglev: teacher-forced, recurrent and memory-zeroed BPB) next to the
unigram baseline, then times P's prompt processing on validation windows: the token-by-token
recurrence against the fixed-point iteration (float32, highest matmul precision), with the
number of iterations the iteration needs to come within `tol` of the recurrent memories.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
import time
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from experiments import common
from experiments import configs
from experiments import model_kinds
from experiments.benchmarking import time_call
from maglev_jax.inference import fixed_point_memories, recurrent_memories
from maglev_jax.model import Maglev, shift_memories
from sdm_jax.data.batches import eval_batches
from sdm_jax.metrics import unigram_bits_per_byte

MODELS = ("swa", "slsl", "maglev", "maglev_shared")


def config_name(size: str, model: str) -> str:
  """"maglev" -> maglev_<size>, "maglev_shared" -> maglev_<size>_shared, "swa" ->
  maglev_<size>_swa, "slsl" -> maglev_<size>_slsl."""
  suffix = model.removeprefix("maglev").lstrip("_")
  return f"maglev_{size}_{suffix}" if suffix else f"maglev_{size}"


def build_configs(size: str, models: Sequence[str], *, steps: int | None,
                  data_path: str | None, model_overrides: dict[str, Any],
                  train_overrides: dict[str, Any]) -> dict[str, Any]:
  """{config name: (kind, model_config, train_config, data_config)}, all at equal tokens."""
  unknown = sorted(set(models) - set(MODELS))
  if unknown or not models:
    raise ValueError(f"models must be a non-empty subset of {MODELS}, got {list(models)}")
  result = {}
  for model in models:
    config = configs.get_config(config_name(size, model))
    config.model.update(model_overrides)
    config.train.update(train_overrides)
    if steps is not None:
      # optax's cosine decay needs at least one step after the warmup.
      config.train.update(steps=steps, checkpoint_every=steps,
                          warmup_steps=min(config.train.warmup_steps, steps - 1))
    if data_path is not None:
      config.data.path = data_path
    result[config.name] = (model_kinds.kind_named(config.kind), *common.lm_configs(config))
  runs = {(t.steps, t.batch_size, t.seq_len, t.eval_tokens, d) for _, _, t, d in result.values()}
  if len(runs) != 1:
    raise ValueError(f"the configs must train for equal tokens on the same data and evaluate "
                     f"on the same targets; got (steps, batch, seq_len, eval_tokens, data) {runs}")
  return result


def time_prefill(model: Maglev, params, prompts: jax.Array, *, tol: float,
                 repeats: int) -> dict[str, Any]:
  """Recurrent vs fixed-point memories of P over prompts [B, T], in float32."""
  model = Maglev(dataclasses.replace(model.config, compute_dtype="float32"))
  with jax.default_matmul_precision("highest"):
    recurrent = jax.jit(lambda p, x: recurrent_memories(model, p, x))
    fixed_point = jax.jit(lambda p, x: fixed_point_memories(model, p, x, tol=tol))
    one_pass = jax.jit(lambda p, x, m: model.decoder_hidden(p, x, shift_memories(m)))
    reference = recurrent(params, prompts)
    memories, iterations = fixed_point(params, prompts)
    error = float(jnp.max(jnp.abs(memories - reference)))
    # The iteration count that reaches the recurrent answer, checked against it directly
    # (the stopping rule above only sees the change between iterates).
    iterate, needed = jnp.zeros_like(reference), None
    for n in range(1, prompts.shape[1] + 1):
      iterate = one_pass(params, prompts, iterate)
      if float(jnp.max(jnp.abs(iterate - reference))) <= tol:
        needed = n
        break
    recurrent_ms = time_call(lambda: recurrent(params, prompts), warmup=1, repeats=repeats)
    fixed_point_ms = time_call(lambda: fixed_point(params, prompts), warmup=1, repeats=repeats)
  return {
      "batch": int(prompts.shape[0]), "tokens": int(prompts.shape[1]), "tol": tol,
      "fixed_point_iterations": int(iterations),
      "fixed_point_max_error_vs_recurrent": error,
      "iterations_to_recurrent_within_tol": needed,
      "recurrent_ms": recurrent_ms["median_ms"], "fixed_point_ms": fixed_point_ms["median_ms"],
      "speedup": recurrent_ms["median_ms"] / fixed_point_ms["median_ms"],
  }


def _parameter_counts(params) -> dict[str, int]:
  counts = {"total": sum(int(np.prod(x.shape)) for x in jax.tree.leaves(params))}
  if isinstance(params, dict) and "decoder" in params:
    counts["inference"] = sum(int(np.prod(x.shape)) for x in jax.tree.leaves(params["decoder"]))
  return counts


def compare(size: str = "tiny", models: Sequence[str] = MODELS, *, steps: int | None = None,
            workdir_root: str | None = None, data_path: str | None = None,
            model_overrides: dict[str, Any] | None = None,
            train_overrides: dict[str, Any] | None = None, prefill_batch: int = 8,
            prefill_len: int | None = None, tol: float = 1e-4, repeats: int = 5,
            log: Callable[[str], None] = print) -> dict[str, Any]:
  """Trains, evaluates and times as the module docstring says; returns the JSON summary."""
  runs = build_configs(size, models, steps=steps, data_path=data_path,
                       model_overrides=model_overrides or {},
                       train_overrides=train_overrides or {})
  workdir_root = workdir_root or tempfile.mkdtemp(prefix=f"maglev_compare_{size}_")
  _, first_model, first_train, data_config = next(iter(runs.values()))
  train_tokens, val_tokens = common.load_splits(data_config, first_model.vocab_size)
  summary: dict[str, Any] = {
      "size": size, "device": jax.devices()[0].device_kind, "steps": first_train.steps,
      "tokens_per_model": first_train.steps * first_train.batch_size * first_train.seq_len,
      "unigram_bpb": unigram_bits_per_byte(train_tokens, val_tokens, first_model.vocab_size),
      "workdir_root": workdir_root, "models": {}, "prefill": {}}
  for name, (kind, model_config, train_config, data) in runs.items():
    log(f"== training {name} ({type(model_config).__name__}) for {train_config.steps} steps")
    workdir = os.path.join(workdir_root, name)
    start = time.perf_counter()
    result = kind.train(model_config, train_config, train_tokens, val_tokens, workdir,
                        extra_config={"name": name, "data": dataclasses.asdict(data)},
                        log=lambda line: log(f"  {line}"))
    result["wall_s"] = time.perf_counter() - start
    model, params, _, _ = kind.load(workdir)
    result["parameters"] = _parameter_counts(params)
    summary["models"][name] = result
    log(f"  {name}: " + json.dumps(result))
    if isinstance(model, Maglev):
      length = prefill_len or train_config.seq_len
      prompts = next(eval_batches(val_tokens, batch_size=prefill_batch, seq_len=length))
      summary["prefill"][name] = time_prefill(model, params, jnp.asarray(prompts["inputs"]),
                                              tol=tol, repeats=repeats)
      log(f"  {name} prefill: " + json.dumps(summary["prefill"][name]))
  log(format_table(summary))
  return summary


def format_table(summary: dict[str, Any]) -> str:
  """The human-readable part of a `compare` summary."""
  lines = [f"{summary['size']} on {summary['device']}: {summary['steps']} steps, "
           f"{summary['tokens_per_model']:,} tokens per model; unigram BPB "
           f"{summary['unigram_bpb']:.4f}",
           f"{'model':<22} {'params':>10} {'val_bpb':>8} {'teacher':>8} {'recurrent':>9} "
           f"{'mem=0':>8} {'train_s':>8}"]
  dash = lambda value: "-" if value is None else f"{value:.4f}"  # noqa: E731
  for name, result in summary["models"].items():
    lines.append(f"{name:<22} {result['parameters']['total']:>10,} {result['val_bpb']:>8.4f} "
                 f"{dash(result.get('bpb_teacher_forced')):>8} "
                 f"{dash(result.get('bpb_recurrent')):>9} "
                 f"{dash(result.get('bpb_memory_zeroed')):>8} {result['wall_s']:>8.1f}")
  for name, prefill in summary["prefill"].items():
    lines.append(f"prefill {name}: {prefill['batch']}x{prefill['tokens']} tokens, recurrent "
                 f"{prefill['recurrent_ms']:.1f} ms, fixed point {prefill['fixed_point_ms']:.1f} "
                 f"ms ({prefill['fixed_point_iterations']} iterations, max error "
                 f"{prefill['fixed_point_max_error_vs_recurrent']:.1e}); within tol of the "
                 f"recurrence after {prefill['iterations_to_recurrent_within_tol']} iterations")
  return "\n".join(lines)
