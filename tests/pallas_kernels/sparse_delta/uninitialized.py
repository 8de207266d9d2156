"""The phase-2 kernels' uninitialized buffers filled with NaN in tests, so that an element a
kernel should write and does not reaches the outputs or gradients (`scan_pallas.
_uninitialized`; in interpret mode `lax.empty` gives zeros, which would hide it)."""

from __future__ import annotations

import jax.numpy as jnp

from pallas_kernels.sparse_delta import scan_pallas


def poison_uninitialized(monkeypatch) -> None:
  """Makes every buffer the kernels should write in full start as NaN."""
  monkeypatch.setattr(scan_pallas, "_uninitialized",
                      lambda shape, dtype: jnp.full(shape, jnp.nan, dtype))
