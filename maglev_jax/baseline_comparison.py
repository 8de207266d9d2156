"""Maglev against its baselines at equal tokens, and fixed-point against recurrent prefill:
the library behind `experiments.maglev_compare`.

`compare` trains Maglev and baseline runs (there: the configs `maglev_<size>_swa`,
`maglev_<size>_slsl`, `maglev_<size>` and `maglev_<size>_shared`) for the same steps
(hence tokens) with `maglev_jax.equal_tokens.compare`, evaluates each on the same
validation targets (Maglev: teacher-forced, recurrent and memory-zeroed BPB) next to the
unigram baseline, then times P's prompt processing on validation windows: the token-by-token
recurrence against the fixed-point iteration (float32, highest matmul precision), with the
number of iterations the iteration needs to come within `tol` of the recurrent memories.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from typing import Any, Callable

import jax
import jax.numpy as jnp

from maglev_jax import equal_tokens
from maglev_jax.inference import fixed_point_memories, recurrent_memories
from maglev_jax.model import Maglev, shift_memories
from sdm_jax.data.batches import eval_batches
from sdm_jax.evaluation.timing import time_call
from sdm_jax.training.run_data import Data


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


def compare(runs: dict[str, equal_tokens.Run], data: Data, *, workdir_root: str | None = None,
            prefill_batch: int = 8, prefill_len: int | None = None, tol: float = 1e-4,
            repeats: int = 5, log: Callable[[str], None] = print) -> dict[str, Any]:
  """Trains, evaluates and times as the module docstring says; returns the JSON summary:
  `equal_tokens.compare`'s, with the prefill timings of the Maglev models under
  "prefill"."""

  def prefill(name, run, model, params, val_tokens):
    if not isinstance(model, Maglev):
      return None
    length = prefill_len or run.train.seq_len
    prompts = next(eval_batches(val_tokens, batch_size=prefill_batch, seq_len=length))
    result = time_prefill(model, params, jnp.asarray(prompts["inputs"]), tol=tol,
                          repeats=repeats)
    log(f"  {name} prefill: " + json.dumps(result))
    return result

  summary = equal_tokens.compare(
      runs, data, workdir_root=workdir_root or tempfile.mkdtemp(prefix="maglev_compare_"),
      after_training=prefill, log=log)
  summary["prefill"] = summary.pop("extra")
  return summary


def format_table(summary: dict[str, Any]) -> str:
  """The human-readable part of a `compare` summary: BPBs, or losses in nats per token
  where the bytes per token are unknown."""
  metric = equal_tokens.headline_metric(summary)
  prefix = "loss" if metric == "val_loss" else "bpb"
  # "size": the config family, which the CLI adds to the summary.
  title = (f"{summary['size']} on " if "size" in summary else "") + equal_tokens.run_line(summary)
  lines = [title,
           f"{'model':<22} {'params':>10} {metric:>8} {'teacher':>8} {'recurrent':>9} "
           f"{'mem=0':>8} {'train_s':>8}"]
  dash = lambda value: "-" if value is None else f"{value:.4f}"  # noqa: E731
  for name, result in summary["models"].items():
    lines.append(f"{name:<22} {result['parameters_total']:>10,} {result[metric]:>8.4f} "
                 f"{dash(result.get(f'{prefix}_teacher_forced')):>8} "
                 f"{dash(result.get(f'{prefix}_recurrent')):>9} "
                 f"{dash(result.get(f'{prefix}_memory_zeroed')):>8} {result['wall_s']:>8.1f}")
  for name, prefill in summary["prefill"].items():
    lines.append(f"prefill {name}: {prefill['batch']}x{prefill['tokens']} tokens, recurrent "
                 f"{prefill['recurrent_ms']:.1f} ms, fixed point {prefill['fixed_point_ms']:.1f} "
                 f"ms ({prefill['fixed_point_iterations']} iterations, max error "
                 f"{prefill['fixed_point_max_error_vs_recurrent']:.1e}); within tol of the "
                 f"recurrence after {prefill['iterations_to_recurrent_within_tol']} iterations")
  return "\n".join(lines)
