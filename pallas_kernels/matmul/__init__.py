"""Products of a few rows with several weight matrices at once (the projections of a decode
step): `skinny_pallas` (the GPU kernel) and its XLA twin `skinny_xla`."""
