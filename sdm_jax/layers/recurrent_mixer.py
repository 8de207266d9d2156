"""The parallel entry points shared by the recurrent mixers (GDN `G`, SDM `M`).

A recurrent mixer's training pass and its prefill are the same parallel pass; its decode
cache is the final recurrent state, of constant size at any context length. Subclasses
define `_run(x) -> (y, cache)` and `decode`.
"""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax


class RecurrentMixer(nn.Module):
  """`__call__` and `prefill` in terms of the subclass's parallel pass `_run`."""

  def _run(self, x: jax.Array) -> tuple[jax.Array, Any]:
    """x [B, T, d] -> (y [B, T, d], the decode cache after the last token)."""
    raise NotImplementedError

  def __call__(self, x: jax.Array, positions: jax.Array) -> jax.Array:
    """x [B, T, d] -> [B, T, d] (positions unused: the recurrence orders the tokens)."""
    del positions
    return self._run(x)[0]

  def prefill(self, x: jax.Array, positions: jax.Array, cache_len: int):
    """Parallel pass over a prompt -> (y, cache); the cache is the final state."""
    del positions, cache_len  # constant-size state
    return self._run(x)
