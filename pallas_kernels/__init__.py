"""Pallas kernels (GPU: Triton; TPU: Mosaic) with their pure-JAX references (no Flax;
nothing imports upward)."""
