# Session 55's second call (devrun from session55_copies.sh). DEADLINE=440, carry .whl and
# devrun. q55's compiled tests (as 55a's for p55), then `sdm_small`'s step, one process
# each, two rounds: m55 (main), q55 (plan-flat-ids), p55 (plan-gathers), `gdn_small` each
# round for the ratio. About 380 s on a host like 55a's. The deadline cuts from the end.
source experiments/device/common.sh
step tests_q55 100 devrun/q55 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q \
  -m gpu tests/pallas_kernels/sparse_delta/test_pair_weights.py \
  tests/pallas_kernels/sparse_delta/test_scan_pallas.py -k "pair or (float32 and compiled)"
GDN_TREE=m55 step_rounds "a b" m55 q55 p55
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
