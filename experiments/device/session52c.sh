# Session 52's third call. DEADLINE=330, carry .whl and devrun, run from main's checkout:
# devrun/m53 = `git archive main` after the pair-terms-summed merge; devrun/u2 = branch
# pair-unroll with `writer_unroll: int = 2` as its default (the pair-weight kernels walk
# two writers per loop iteration; XLA's build: the backward's loop 201 instructions for
# two writers against 118 for one at 96 registers, 5 programs per SM as before; the
# forward 106 registers, 4 per SM, against 96 and 5).
# `sdm_small`'s step, one process each, two rounds, then the branch's compiled pair-weight
# tests. The deadline cuts from the end.
source experiments/device/common.sh
step_rounds "a b" m53 u2
step tests_u2 60 devrun/u2 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q \
  -n 4 -m gpu tests/pallas_kernels/sparse_delta/test_pair_weights.py
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
