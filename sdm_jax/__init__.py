"""Sparse Delta Memory and its baselines in JAX/Flax.

Layers: `sdm_jax.ops` (pure functions), `sdm_jax.layers` (Flax Linen modules around them),
`sdm_jax.models` (the pattern-string language model), `sdm_jax.data`, `sdm_jax.training`.
"""

__version__ = "0.1.0"
