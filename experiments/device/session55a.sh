# Session 55's first call (devrun from session55_copies.sh). DEADLINE=560, carry .whl and
# devrun. p55's compiled tests (pair weights; the float32-table scan against the XLA twin),
# then `sdm_small`'s step, one process each, two rounds: m55 (main), p55 (plan-gathers),
# `gdn_small` each round for the ratio; then p55's per-op profile if time is left. About
# 330 s on a host like 54a's. The deadline cuts from the end.
source experiments/device/common.sh
step tests_p55 120 devrun/p55 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q \
  -m gpu tests/pallas_kernels/sparse_delta/test_pair_weights.py \
  tests/pallas_kernels/sparse_delta/test_scan_pallas.py -k "pair or (float32 and compiled)"
GDN_TREE=m55 step_rounds "a b" m55 p55
step_profile p55 100
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
