"""Pieces shared by the synthetic recall tasks (`mqar`, `needle`): argument checks and
vectorised sampling without replacement.
"""

from __future__ import annotations

from typing import Any

import numpy as np

IGNORE_LABEL = -100  # Target at positions that are not scored.

# Rows are sampled in chunks so that the [rows, population] random keys stay ~32 MiB.
_CHUNK_ELEMENTS = 1 << 22
# Populations up to this size are sampled exactly with random keys when collisions
# would make rejection sampling slow.
_SMALL_POPULATION = 1 << 16


def _is_int(value: Any) -> bool:
  return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def check_int(name: str, value: Any, *, low: int, high: int | None = None) -> int:
  """`value` as an int, or ValueError naming `name` and the range [low, high]."""
  allowed = f"[{low}, {high}]" if high is not None else f">= {low}"
  if not _is_int(value) or value < low or (high is not None and value > high):
    raise ValueError(f"{name} must be an int {allowed}, got {value!r}")
  return int(value)


def check_bool(name: str, value: Any) -> bool:
  if not isinstance(value, (bool, np.bool_)):
    raise ValueError(f"{name} must be True or False, got {value!r}")
  return bool(value)


def check_seed(seed: Any) -> np.random.Generator:
  return np.random.default_rng(check_int("seed", seed, low=0))


def _smallest_keys(keys: np.ndarray, count: int) -> np.ndarray:
  """Column ids of the `count` smallest keys of each row, smallest first [rows, count]."""
  if count < keys.shape[1]:
    chosen = np.argpartition(keys, count - 1, axis=1)[:, :count]
  else:
    chosen = np.broadcast_to(np.arange(keys.shape[1]), keys.shape).copy()
  order = np.argsort(np.take_along_axis(keys, chosen, axis=1), axis=1)
  return np.take_along_axis(chosen, order, axis=1)


def sample_without_replacement(rng: np.random.Generator, num_rows: int, population: int,
                               count: int, *, weights: np.ndarray | None = None
                               ) -> np.ndarray:
  """Per row, `count` distinct ids of range(population) in draw order [num_rows, count].

  Each row is successive sampling without replacement with probabilities proportional
  to `weights` [population] (uniform if None), the scheme of `rng.choice(population,
  count, replace=False, p=weights / weights.sum())`, vectorised over rows: the draw
  order equals the order of Exp(1) / weight keys (an exponential race).
  """
  if not 1 <= count <= population:
    raise ValueError(f"count must be in [1, population={population}], got {count}")
  if weights is not None:
    weights = np.asarray(weights, dtype=np.float64)
    if weights.shape != (population,) or not np.all(weights > 0):
      raise ValueError(f"weights must be {population} positive numbers")
  out = np.empty((num_rows, count), dtype=np.int64)
  rows_per_chunk = max(1, _CHUNK_ELEMENTS // population)
  for start in range(0, num_rows, rows_per_chunk):
    stop = min(start + rows_per_chunk, num_rows)
    keys = rng.exponential(size=(stop - start, population))
    if weights is not None:
      keys /= weights
    out[start:stop] = _smallest_keys(keys, count)
  return out


def _rows_with_repeats(tuples: np.ndarray) -> np.ndarray:
  """Mask [rows] of rows of `tuples` [rows, count, length] holding a tuple twice."""
  rows, count, length = tuples.shape
  flat = tuples.reshape(rows * count, length)
  row_ids = np.repeat(np.arange(rows), count)
  # lexsort's last key is the primary one: sort by row, then by the tuple's tokens.
  order = np.lexsort([flat[:, j] for j in reversed(range(length))] + [row_ids])
  flat, row_ids = flat[order], row_ids[order]
  same = np.all(flat[1:] == flat[:-1], axis=1) & (row_ids[1:] == row_ids[:-1])
  repeats = np.zeros(rows, dtype=bool)
  repeats[row_ids[1:][same]] = True
  return repeats


def _digits(ids: np.ndarray, base: int, length: int) -> np.ndarray:
  """Base-`base` digits of `ids`, most significant first [..., length]."""
  powers = base ** np.arange(length - 1, -1, -1, dtype=np.int64)
  return (ids[..., None] // powers) % base


def sample_distinct_tuples(rng: np.random.Generator, num_rows: int, count: int,
                           length: int, low: int, high: int) -> np.ndarray:
  """Per row, `count` distinct tuples of `length` ids in [low, high) [num_rows, count, length].

  Uniform over ordered sequences of distinct tuples (tuples differ as wholes; tokens may
  repeat across tuples). The caller checks that (high - low) ** length >= count.
  """
  base = high - low
  population = base ** length  # A Python int: exact even past int64.
  if count > population:
    raise ValueError(f"count={count} exceeds the {population} possible tuples")
  # Integer test of "expected repeated pairs count*(count-1)/2/population <= 1" (the
  # population can be too large for a float).
  if count * (count - 1) <= 2 * population:
    # Rejection: redraw the rows that repeat a tuple; a draw succeeds w.p. ~exp(-1) or more.
    tuples = rng.integers(low, high, size=(num_rows, count, length))
    redraw = _rows_with_repeats(tuples)
    while redraw.any():
      tuples[redraw] = rng.integers(low, high, size=(int(redraw.sum()), count, length))
      redraw[redraw] = _rows_with_repeats(tuples[redraw])
    return tuples
  if population <= _SMALL_POPULATION:
    ids = sample_without_replacement(rng, num_rows, population, count)
  else:
    # Crowded and large (count > sqrt(2 * population) > 362): rare; numpy's per-row
    # sampler does not enumerate the population, which is < count**2 / 2 and fits int64.
    ids = np.stack([rng.choice(population, size=count, replace=False)
                    for _ in range(num_rows)])
  return low + _digits(ids, base, length)


def labelled(sequences: np.ndarray, answer_mask: np.ndarray) -> dict[str, np.ndarray]:
  """Inputs and targets from full sequences [n, T + 1] and a mask of answer tokens.

  inputs = sequences[:, :T]; targets[:, t] = sequences[:, t + 1] where that next token is
  an answer token, else IGNORE_LABEL.
  """
  inputs = sequences[:, :-1]
  targets = np.where(answer_mask[..., 1:], sequences[:, 1:], IGNORE_LABEL)
  return {"inputs": inputs.astype(np.int32), "targets": targets.astype(np.int32)}

