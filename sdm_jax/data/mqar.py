"""Multi-query associative recall (MQAR), the synthetic task of the Zoology benchmark.

Follows the layout of `multiquery_ar` in HazyResearch/zoology (zoology/data/
multiquery_ar.py, with num_passes=1), reimplemented in vectorised numpy. Differences:
seq_len need not be even and vocab_size need not exceed seq_len (neither constraint is
needed for the layout); there is no JRT `num_passes` option; random streams differ
(`np.random.default_rng(seed)` instead of the global numpy seed).
"""

from __future__ import annotations

import math

import numpy as np

from sdm_jax.data._recall_common import (IGNORE_LABEL, check_bool, check_int, check_seed,
                                         sample_distinct_tuples,
                                         sample_without_replacement)


def mqar(num_examples: int, *, seq_len: int, num_kv_pairs: int, vocab_size: int,
         power_a: float = 0.01, random_non_queries: bool = True,
         seed: int) -> dict[str, np.ndarray]:
  """MQAR examples {"inputs", "targets"}, both int32 [num_examples, seq_len].

  With N = num_kv_pairs, keys are N distinct ids of [1, vocab_size // 2) and values N
  distinct ids of [vocab_size // 2, vocab_size). Positions 0..2N-1 hold `k1 v1 ... kN vN`.
  The rest holds S = (seq_len - 2N) // 2 query slots at the even offsets 2N, 2N + 2, ...;
  every key is queried once, at slots drawn without replacement with
  p(slot s) ~ s ** (power_a - 1) for s = 1..S (queries cluster right after the pairs).
  targets[t] = value of the key at a query position t (the model predicts the value
  next), IGNORE_LABEL (-100) elsewhere. Every other position (including the one after a
  query: the value is never shown there) is filler: uniform over [0, vocab_size) if
  `random_non_queries`, else 0. Random filler can repeat a key token; it is unlabelled.

  Example, N=2, vocab_size=12, seq_len=14, random_non_queries=False:
    inputs:   2    8    4    7    0    0    4    0    0    0    2    0    0    0
    targets: -100 -100 -100 -100 -100 -100  7  -100 -100 -100  8  -100 -100 -100
  """
  num_examples = check_int("num_examples", num_examples, low=1)
  num_kv_pairs = check_int("num_kv_pairs", num_kv_pairs, low=1)
  vocab_size = check_int("vocab_size", vocab_size, low=4)
  max_pairs = vocab_size // 2 - 1
  if num_kv_pairs > max_pairs:
    raise ValueError(
        f"num_kv_pairs must be in [1, vocab_size // 2 - 1 = {max_pairs}] (distinct keys "
        f"from [1, {vocab_size // 2})), got {num_kv_pairs}; raise vocab_size to at least "
        f"{2 * num_kv_pairs + 2}")
  seq_len = check_int("seq_len", seq_len, low=1)
  if seq_len < 4 * num_kv_pairs:
    raise ValueError(
        f"seq_len must be >= 4 * num_kv_pairs = {4 * num_kv_pairs} (2 tokens per pair "
        f"and 2 per query slot), got {seq_len}")
  if (isinstance(power_a, bool) or not isinstance(power_a, (int, float, np.floating,
                                                             np.integer))
      or not math.isfinite(power_a) or power_a <= 0):
    raise ValueError(f"power_a must be a finite number > 0, got {power_a!r}")
  random_non_queries = check_bool("random_non_queries", random_non_queries)
  rng = check_seed(seed)

  n, num_pairs = num_examples, num_kv_pairs
  half = vocab_size // 2
  keys = sample_distinct_tuples(rng, n, num_pairs, 1, 1, half)[..., 0]
  values = sample_distinct_tuples(rng, n, num_pairs, 1, half, vocab_size)[..., 0]
  num_slots = (seq_len - 2 * num_pairs) // 2
  slot_weights = np.arange(1, num_slots + 1, dtype=np.float64) ** (float(power_a) - 1.0)
  # Key i goes to the i-th slot drawn; keys are already in random order.
  slots = sample_without_replacement(rng, n, num_slots, num_pairs, weights=slot_weights)
  query_positions = 2 * num_pairs + 2 * slots

  if random_non_queries:
    inputs = rng.integers(0, vocab_size, size=(n, seq_len), dtype=np.int32)
  else:
    inputs = np.zeros((n, seq_len), dtype=np.int32)
  inputs[:, 0:2 * num_pairs:2] = keys
  inputs[:, 1:2 * num_pairs:2] = values
  np.put_along_axis(inputs, query_positions, keys, axis=1)
  targets = np.full((n, seq_len), IGNORE_LABEL, dtype=np.int32)
  np.put_along_axis(targets, query_positions, values, axis=1)
  return {"inputs": inputs, "targets": targets}


def recall_positions(inputs: np.ndarray, targets: np.ndarray, num_kv_pairs: int
                     ) -> tuple[np.ndarray, np.ndarray]:
  """For MQAR examples (`mqar`'s layout): (query positions, value positions), int32
  [n, num_kv_pairs] each: every labelled position, in order, and where the value its key
  was paired with stands (2i + 1 for key i): the position a model must read at and the one
  it must have written at for the recall to go through its memory."""
  inputs, targets = np.asarray(inputs), np.asarray(targets)
  if inputs.shape != targets.shape or inputs.ndim != 2:
    raise ValueError(f"inputs and targets must be [n, T] of one shape, got {inputs.shape} "
                     f"and {targets.shape}")
  labelled = targets != IGNORE_LABEL
  if not (labelled.sum(axis=1) == num_kv_pairs).all():
    raise ValueError(f"every example must have num_kv_pairs={num_kv_pairs} labelled "
                     f"positions, got {sorted(set(labelled.sum(axis=1).tolist()))}")
  queries = np.nonzero(labelled)[1].reshape(-1, num_kv_pairs).astype(np.int32)
  keys = inputs[:, 0:2 * num_kv_pairs:2]                                 # [n, P]
  asked = np.take_along_axis(inputs, queries, axis=1)                   # [n, P]
  pair = np.argmax(keys[:, None, :] == asked[:, :, None], axis=2)       # key index
  return queries, (2 * pair + 1).astype(np.int32)
