"""Pallas GPU kernels with their pure-JAX references (no Flax; nothing imports upward)."""
