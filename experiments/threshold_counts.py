"""How many bit counts the top-k kernel's threshold selection needs if it stops early.

  python -m experiments.threshold_counts --sub_keys=128,512,1024 --k=64 [--bf16]

`topk_pallas._thresholds` builds the cut key bit by bit, from the sign bit down, as the
largest int32 t with at least k keys >= t: one count over the row per bit. Once exactly k
keys are >= t, t already chooses the k best, so the counts stop there (WORKSPACE.md, issue
12, sessions 59-60). This replays that bit-building in numpy on random normal score rows,
with the kernel's own key map (`ordered_key`), and prints, per S and k, how many counts a
row needs: for a half (the larger of the two, as both halves count in one loop) and for
the final selection over the pruned pair grid's sums. A static estimate of the loop trips,
not a timing; `_thresholds` reports no counts, so tests check the replay's cut against
its.
"""

from __future__ import annotations

import json

from absl import flags
import jax.numpy as jnp
import numpy as np

from experiments import cli
from pallas_kernels.product_key import topk_pallas
from pallas_kernels.product_key import topk_xla

_SUB_KEYS = flags.DEFINE_list("sub_keys", ["128", "512", "1024"], "S, sub-keys per half.")
_K = flags.DEFINE_list("k", ["32", "64"], "Slots selected per row.")
_ROWS = flags.DEFINE_integer("rows", 300, "Random rows per shape.")
_BF16 = flags.DEFINE_boolean("bf16", False, "Round the scores to bfloat16 first (as the "
                             "layer's bf16 projections give them).")
_SEED = flags.DEFINE_integer("seed", 0, "Random seed.")

KEY_BITS = 32


def counts_to_cut(keys: np.ndarray, k: int) -> tuple[int, int]:
  """(bit counts, cut) for one row of int32 keys: the sign count, then one count per lower
  bit until exactly k keys are >= the cut (at most KEY_BITS counts in all)."""
  keys = keys.astype(np.int64)
  cut = 0 if (keys >= 0).sum() >= k else int(np.iinfo(np.int32).min)
  at_least, counts = (keys >= cut).sum(), 1
  for bit in reversed(range(KEY_BITS - 1)):
    if at_least == k:
      break
    trial = cut | (1 << bit)
    trial_count = (keys >= trial).sum()
    counts += 1
    if trial_count >= k:
      cut, at_least = trial, trial_count
  return counts, cut


def row_counts(scores: np.ndarray, k: int) -> tuple[int, int]:
  """scores [2, S] float32 -> (the larger half's counts, the final selection's counts)."""
  keys = np.asarray(topk_pallas.ordered_key(jnp.asarray(scores)))
  per_half = min(k, scores.shape[1])
  halves = max(counts_to_cut(keys[half], per_half)[0] for half in range(2))
  ranked = -np.sort(-scores, axis=1)
  pairs = topk_xla.candidate_pairs(k, per_half)
  sums = (ranked[0, pairs[:, 0]] + ranked[1, pairs[:, 1]]).astype(np.float32)
  final = counts_to_cut(np.asarray(topk_pallas.ordered_key(jnp.asarray(sums))), k)[0]
  return halves, final


def main(argv):
  del argv
  rng = np.random.default_rng(_SEED.value)
  results = []
  for sub_keys in map(int, _SUB_KEYS.value):
    for k in map(int, _K.value):
      scores = rng.standard_normal((_ROWS.value, 2, sub_keys)).astype(np.float32)
      if _BF16.value:
        scores = np.asarray(jnp.asarray(scores, jnp.bfloat16).astype(jnp.float32))
      halves, final = np.array([row_counts(row, k) for row in scores]).T
      result = dict(sub_keys=sub_keys, k=k, bf16=_BF16.value, rows=_ROWS.value,
                    halves_mean=float(halves.mean()),
                    halves_p95=float(np.percentile(halves, 95)),
                    final_mean=float(final.mean()),
                    final_p95=float(np.percentile(final, 95)))
      results.append(result)
      print(f"S = {sub_keys:5d}, k = {k:3d}: halves {result['halves_mean']:4.1f} "
            f"(p95 {result['halves_p95']:.0f}), final {result['final_mean']:4.1f} "
            f"(p95 {result['final_p95']:.0f}) of {KEY_BITS} counts")
  print(json.dumps({"op": "threshold_counts", "results": results}))


if __name__ == "__main__":
  cli.run(main)
