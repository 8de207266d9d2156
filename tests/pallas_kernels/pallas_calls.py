"""The `pallas_call` equations of a traced program, for tests that check which kernels a
program launches and how."""

from __future__ import annotations

from jax.extend.core import jaxprs_in_params


def pallas_calls(jaxpr, calls=None):
  """Every pallas_call equation in `jaxpr` and its sub-jaxprs, in order."""
  calls = [] if calls is None else calls
  for eqn in jaxpr.eqns:
    if eqn.primitive.name == "pallas_call":
      calls.append(eqn)
    for sub in jaxprs_in_params(eqn.params):
      pallas_calls(sub, calls)
  return calls


def kernel_names(jaxpr):
  """Names of the kernel functions of every pallas_call in `jaxpr` and its sub-jaxprs."""
  return [eqn.params["jaxpr"].debug_info.func_name for eqn in pallas_calls(jaxpr)]
