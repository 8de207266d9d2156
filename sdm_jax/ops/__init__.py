"""Pure-JAX operators: the math of every mixer, each with a readable reference.

Every op takes `impl="auto" | "reference" | "chunked" | "pallas"` where it has several.
"""
