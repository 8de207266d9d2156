"""Needle-in-a-haystack tasks in the style of RULER (NVIDIA/RULER), on synthetic tokens.

RULER's retrieval tasks hide needles "key -> value" in a haystack and ask for the values
of some keys; its variable tracking hides chains of assignments. Here everything is
token ids of a task vocabulary [0, vocab_size):

- id 0 (`EQUALS_ID`, "=") separates a key from its value, in needles and queries;
- id 1 (`QUERY_ID`, "?") starts a query;
- key and variable-name tokens: [2, middle); value tokens: [middle, vocab_size), with
  middle = 2 + (vocab_size - 2) // 2 (`needle_token_ranges`);
- filler: "random" draws uniform ids over [2, vocab_size) (keys and values included, so
  only "=" marks a needle); "repeat" repeats one fixed noise pattern of `NOISE_PERIOD`
  ids, the same for every seed (like RULER's repeated "The grass is green..." text).

A sequence of seq_len + 1 tokens is the haystack with needles inserted, then the query
block; inputs are its first seq_len tokens, and targets[t] is token t + 1 where that
token is an answer token, else -100. The last answer token is only a target.

Depth: needles are inserted between filler tokens; `depth` in [0, 1] puts the queried
needles after round(depth * F) of the F filler tokens (0: before all filler, 1: after
it), all together in random order; other needles, and all needles when `depth` is None,
go at uniform random points. Values of one key are recalled in haystack order.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from sdm_jax.data._recall_common import (check_int, check_seed, labelled,
                                         sample_distinct_tuples,
                                         sample_without_replacement)

EQUALS_ID = 0
QUERY_ID = 1
NUM_RESERVED_IDS = 2
FILLER_MODES = ("random", "repeat")
NOISE_PERIOD = 16
_NOISE_PATTERN_SEED = 20240406  # Fixed: the "repeat" haystack is the same for all seeds.


def needle_token_ranges(vocab_size: int) -> tuple[tuple[int, int], tuple[int, int]]:
  """((key_low, key_high), (value_low, value_high)), half-open ranges of token ids."""
  vocab_size = check_int("vocab_size", vocab_size, low=NUM_RESERVED_IDS + 2)
  middle = NUM_RESERVED_IDS + (vocab_size - NUM_RESERVED_IDS) // 2
  return (NUM_RESERVED_IDS, middle), (middle, vocab_size)


def noise_pattern(vocab_size: int) -> np.ndarray:
  """The int64 [NOISE_PERIOD] ids that "repeat" filler cycles through."""
  vocab_size = check_int("vocab_size", vocab_size, low=NUM_RESERVED_IDS + 2)
  return np.random.default_rng(_NOISE_PATTERN_SEED).integers(
      NUM_RESERVED_IDS, vocab_size, size=NOISE_PERIOD)


def _check_filler(filler: Any) -> str:
  if filler not in FILLER_MODES:
    raise ValueError(f"filler must be one of {FILLER_MODES}, got {filler!r}")
  return filler


def _check_depth(depth: Any) -> float | None:
  if depth is None:
    return None
  if (isinstance(depth, (bool, np.bool_))
      or not isinstance(depth, (int, float, np.integer, np.floating))
      or not 0.0 <= float(depth) <= 1.0):
    raise ValueError(f"depth must be a number in [0, 1] or None (random), got {depth!r}")
  return float(depth)


def _check_tuple_space(name: str, needed: int, *, base: int, length: int,
                       length_name: str, what: str) -> None:
  available = base ** length
  if needed > available:
    raise ValueError(
        f"{name} asks for {needed} distinct {what}, but only {available} "
        f"(= {base} ids ** {length_name}={length}) exist for this vocab_size; raise "
        f"vocab_size or {length_name}, or lower {name}")


def _check_fits(seq_len: int, needed_tokens: int, what: str) -> int:
  """Number of filler tokens left in a sequence of seq_len + 1 tokens."""
  num_filler = seq_len + 1 - needed_tokens
  if num_filler < 0:
    raise ValueError(
        f"seq_len must be >= {needed_tokens - 1} to hold {what}, got {seq_len}")
  return num_filler


def _haystack_order(rng: np.random.Generator, insertion: np.ndarray,
                    priority: np.ndarray) -> np.ndarray:
  """Item ids [n, m] in haystack order: by insertion point, then priority, then at random."""
  tiebreak = rng.random(insertion.shape)
  return np.lexsort((tiebreak, priority, insertion), axis=-1)


def _assemble(rng: np.random.Generator, *, item_tokens: np.ndarray,
              item_lengths: np.ndarray, insertion: np.ndarray, order: np.ndarray,
              num_filler: int, filler: str, vocab_size: int, query_block: np.ndarray,
              query_answer_mask: np.ndarray) -> dict[str, np.ndarray]:
  """Haystack + query block, labelled.

  item_tokens [n, m, L] (item j's first item_lengths[:, j] tokens are used), insertion
  [n, m] in [0, num_filler] (item goes before that filler token), order [n, m] from
  `_haystack_order`, query_block [n, Q_len], query_answer_mask [Q_len].
  """
  n, _, max_len = item_tokens.shape
  lengths = np.take_along_axis(item_lengths, order, axis=1)
  tokens = np.take_along_axis(item_tokens, order[..., None], axis=1)
  starts = np.take_along_axis(insertion, order, axis=1) + np.cumsum(lengths, axis=1) - lengths
  haystack_len = num_filler + int(item_lengths[0].sum())

  if filler == "random":
    haystack = rng.integers(NUM_RESERVED_IDS, vocab_size, size=(n, haystack_len))
  else:
    haystack = np.zeros((n, haystack_len), dtype=np.int64)
  valid = np.arange(max_len) < lengths[..., None]
  rows = np.broadcast_to(np.arange(n)[:, None, None], valid.shape)[valid]
  columns = (starts[..., None] + np.arange(max_len))[valid]
  haystack[rows, columns] = tokens[valid]
  if filler == "repeat":
    is_item = np.zeros((n, haystack_len), dtype=bool)
    is_item[rows, columns] = True
    filler_index = np.cumsum(~is_item, axis=1) - 1
    pattern = noise_pattern(vocab_size)
    haystack = np.where(is_item, haystack, pattern[filler_index % NOISE_PERIOD])

  sequences = np.concatenate([haystack, query_block], axis=1)
  answer_mask = np.concatenate([np.zeros(haystack_len, dtype=bool), query_answer_mask])
  return labelled(sequences, np.broadcast_to(answer_mask, sequences.shape))


def needle_in_haystack(num_examples: int, *, seq_len: int, vocab_size: int,
                       num_keys: int = 1, num_values: int = 1, num_queries: int = 1,
                       key_len: int = 1, value_len: int = 1, depth: float | None = None,
                       filler: str = "random", seed: int) -> dict[str, np.ndarray]:
  """RULER-style retrieval, {"inputs", "targets"} int32 [num_examples, seq_len].

  `num_keys` distinct keys (key_len tokens each) with `num_values` values each (value_len
  tokens; all values of an example distinct) give num_keys * num_values needles
  `k.. = v..`; `num_queries` distinct keys, in random order, are queried, each as
  `? k.. = ` followed by all its values (the answer tokens, labelled).

  Example, vocab_size=16, one needle, key_len=1, value_len=2 (f = filler, 0 = "=", 1 = "?"):
    sequence: f f 5 0 9 12 f f f 1 5 0 9 12
    inputs:   the first seq_len = 13 tokens
    targets:  -100 everywhere except 9 at the query's "=" and 12 at the position of 9
  """
  num_examples = check_int("num_examples", num_examples, low=1)
  seq_len = check_int("seq_len", seq_len, low=1)
  (key_low, key_high), (value_low, value_high) = needle_token_ranges(vocab_size)
  num_keys = check_int("num_keys", num_keys, low=1)
  num_values = check_int("num_values", num_values, low=1)
  num_queries = check_int("num_queries", num_queries, low=1, high=num_keys)
  key_len = check_int("key_len", key_len, low=1)
  value_len = check_int("value_len", value_len, low=1)
  depth = _check_depth(depth)
  filler = _check_filler(filler)
  _check_tuple_space("num_keys", num_keys, base=key_high - key_low, length=key_len,
                     length_name="key_len", what="keys")
  num_needles = num_keys * num_values
  _check_tuple_space("num_values", num_needles, base=value_high - value_low,
                     length=value_len, length_name="value_len",
                     what="values (num_keys * num_values)")
  needle_len = key_len + 1 + value_len
  query_len = 2 + key_len + num_values * value_len
  num_filler = _check_fits(
      seq_len, num_needles * needle_len + num_queries * query_len,
      f"{num_needles} needles of {needle_len} tokens and {num_queries} queries of "
      f"{query_len} tokens")
  rng = check_seed(seed)
  n = num_examples

  keys = sample_distinct_tuples(rng, n, num_keys, key_len, key_low, key_high)
  values = sample_distinct_tuples(rng, n, num_needles, value_len, value_low, value_high)
  values = values.reshape(n, num_keys, num_values, value_len)
  queried = sample_without_replacement(rng, n, num_keys, num_queries)  # [n, Q] key ids

  # Needle j = key j // num_values, its value j % num_values.
  needles = np.concatenate([
      np.broadcast_to(keys[:, :, None], (n, num_keys, num_values, key_len)),
      np.full((n, num_keys, num_values, 1), EQUALS_ID),
      values,
  ], axis=-1).reshape(n, num_needles, needle_len)
  insertion = rng.integers(0, num_filler + 1, size=(n, num_needles))
  if depth is not None:
    is_queried = np.zeros((n, num_keys), dtype=bool)
    np.put_along_axis(is_queried, queried, True, axis=1)
    at_depth = math.floor(depth * num_filler + 0.5)
    insertion = np.where(np.repeat(is_queried, num_values, axis=1), at_depth, insertion)
  order = _haystack_order(rng, insertion, np.zeros_like(insertion))

  # Answer values of each queried key, in haystack order.
  rank = np.argsort(order, axis=1).reshape(n, num_keys, num_values)
  queried_rank = np.take_along_axis(rank, queried[..., None], axis=1)
  value_order = np.argsort(queried_rank, axis=-1)  # [n, Q, num_values]
  queried_values = np.take_along_axis(values, queried[..., None, None], axis=1)
  answers = np.take_along_axis(queried_values, value_order[..., None], axis=2)
  queried_keys = np.take_along_axis(keys, queried[..., None], axis=1)
  query_block = np.concatenate([
      np.full((n, num_queries, 1), QUERY_ID),
      queried_keys,
      np.full((n, num_queries, 1), EQUALS_ID),
      answers.reshape(n, num_queries, num_values * value_len),
  ], axis=-1).reshape(n, num_queries * query_len)
  query_answer_mask = np.tile(np.arange(query_len) >= 2 + key_len, num_queries)

  return _assemble(
      rng, item_tokens=needles, item_lengths=np.full((n, num_needles), needle_len),
      insertion=insertion, order=order, num_filler=num_filler, filler=filler,
      vocab_size=vocab_size, query_block=query_block, query_answer_mask=query_answer_mask)


def needle_single(num_examples: int, *, seq_len: int, vocab_size: int, key_len: int = 1,
                  value_len: int = 1, depth: float | None = None, filler: str = "random",
                  seed: int) -> dict[str, np.ndarray]:
  """One needle `k = v`, one query `? k = v` (RULER niah_single)."""
  return needle_in_haystack(num_examples, seq_len=seq_len, vocab_size=vocab_size,
                            key_len=key_len, value_len=value_len, depth=depth,
                            filler=filler, seed=seed)


def needle_multi_key(num_examples: int, *, seq_len: int, vocab_size: int,
                     num_keys: int = 4, key_len: int = 1, value_len: int = 1,
                     depth: float | None = None, filler: str = "random",
                     seed: int) -> dict[str, np.ndarray]:
  """`num_keys` needles with distinct keys; one is queried, the rest distract (niah_multikey)."""
  return needle_in_haystack(num_examples, seq_len=seq_len, vocab_size=vocab_size,
                            num_keys=num_keys, key_len=key_len, value_len=value_len,
                            depth=depth, filler=filler, seed=seed)


def needle_multi_value(num_examples: int, *, seq_len: int, vocab_size: int,
                       num_values: int = 4, key_len: int = 1, value_len: int = 1,
                       depth: float | None = None, filler: str = "random",
                       seed: int) -> dict[str, np.ndarray]:
  """One key in `num_values` needles; the query recalls all values in haystack order."""
  return needle_in_haystack(num_examples, seq_len=seq_len, vocab_size=vocab_size,
                            num_values=num_values, key_len=key_len, value_len=value_len,
                            depth=depth, filler=filler, seed=seed)


def needle_multi_query(num_examples: int, *, seq_len: int, vocab_size: int,
                       num_keys: int = 4, num_queries: int = 4, key_len: int = 1,
                       value_len: int = 1, depth: float | None = None,
                       filler: str = "random", seed: int) -> dict[str, np.ndarray]:
  """`num_keys` needles, `num_queries` of them queried one after another (niah_multiquery)."""
  return needle_in_haystack(num_examples, seq_len=seq_len, vocab_size=vocab_size,
                            num_keys=num_keys, num_queries=num_queries, key_len=key_len,
                            value_len=value_len, depth=depth, filler=filler, seed=seed)


def variable_tracking(num_examples: int, *, seq_len: int, vocab_size: int,
                      num_chains: int = 1, num_hops: int = 4, name_len: int = 1,
                      value_len: int = 1, filler: str = "random",
                      seed: int) -> dict[str, np.ndarray]:
  """Chains of assignments; the query asks for the value of one chain's last variable.

  Each of `num_chains` chains is `X0 = v`, `X1 = X0`, ..., `Xh = X(h-1)` with h = num_hops
  (names: name_len key-range tokens, all distinct; v: value_len value-range tokens,
  distinct across chains). Its statements sit at random points of the haystack, in chain
  order; chains interleave. The query `? Xh = v` (one chain at random) labels v: the
  model must follow h hops back. (RULER instead asks which variables hold v; the last
  variable's value is a single answer that teacher forcing cannot give away.)

  Example, vocab_size=16, one chain, num_hops=2, name_len=value_len=1:
    sequence: f 4 0 9 f 6 0 4 f f 3 0 6 f 1 3 0 9     (targets: 9 at the query's "=")
  """
  num_examples = check_int("num_examples", num_examples, low=1)
  seq_len = check_int("seq_len", seq_len, low=1)
  (key_low, key_high), (value_low, value_high) = needle_token_ranges(vocab_size)
  num_chains = check_int("num_chains", num_chains, low=1)
  num_hops = check_int("num_hops", num_hops, low=0)
  name_len = check_int("name_len", name_len, low=1)
  value_len = check_int("value_len", value_len, low=1)
  filler = _check_filler(filler)
  num_variables = num_chains * (num_hops + 1)
  _check_tuple_space("num_chains", num_variables, base=key_high - key_low,
                     length=name_len, length_name="name_len",
                     what="variable names (num_chains * (num_hops + 1))")
  _check_tuple_space("num_chains", num_chains, base=value_high - value_low,
                     length=value_len, length_name="value_len", what="chain values")
  first_len = name_len + 1 + value_len
  hop_len = 2 * name_len + 1
  query_len = 2 + name_len + value_len
  num_filler = _check_fits(
      seq_len, num_chains * (first_len + num_hops * hop_len) + query_len,
      f"{num_chains} chains of {num_hops} hops and a query of {query_len} tokens")
  rng = check_seed(seed)
  n, num_steps = num_examples, num_hops + 1

  names = sample_distinct_tuples(rng, n, num_variables, name_len, key_low, key_high)
  names = names.reshape(n, num_chains, num_steps, name_len)
  values = sample_distinct_tuples(rng, n, num_chains, value_len, value_low, value_high)

  max_len = name_len + 1 + max(value_len, name_len)
  statements = np.zeros((n, num_chains, num_steps, max_len), dtype=np.int64)
  statements[..., :name_len] = names
  statements[..., name_len] = EQUALS_ID
  statements[:, :, 0, name_len + 1:first_len] = values
  statements[:, :, 1:, name_len + 1:hop_len] = names[:, :, :-1]
  lengths = np.full((n, num_chains, num_steps), hop_len)
  lengths[:, :, 0] = first_len

  # Sorted per chain so that a chain's statements appear in assignment order.
  insertion = np.sort(rng.integers(0, num_filler + 1, size=(n, num_chains, num_steps)),
                      axis=-1).reshape(n, num_variables)
  hop = np.broadcast_to(np.arange(num_steps), (n, num_chains, num_steps))
  order = _haystack_order(rng, insertion, hop.reshape(n, num_variables))

  chain = rng.integers(0, num_chains, size=n)
  rows = np.arange(n)
  query_block = np.concatenate([
      np.full((n, 1), QUERY_ID), names[rows, chain, -1], np.full((n, 1), EQUALS_ID),
      values[rows, chain]], axis=1)
  query_answer_mask = np.arange(query_len) >= 2 + name_len

  return _assemble(
      rng, item_tokens=statements.reshape(n, num_variables, max_len),
      item_lengths=lengths.reshape(n, num_variables), insertion=insertion, order=order,
      num_filler=num_filler, filler=filler, vocab_size=vocab_size,
      query_block=query_block, query_answer_mask=query_answer_mask)


NEEDLE_TASKS: dict[str, Callable[..., dict[str, np.ndarray]]] = {
    "single": needle_single,
    "multi_key": needle_multi_key,
    "multi_value": needle_multi_value,
    "multi_query": needle_multi_query,
    "variable_tracking": variable_tracking,
}
