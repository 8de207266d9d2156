"""Gated DeltaNet's chunk-state recurrence: the XLA twin (`state_xla`) and its Pallas
kernel (`state_pallas`)."""
