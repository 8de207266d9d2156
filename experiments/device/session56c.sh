# Session 56's third call (the machine 56b left warm, same devrun and carry). DEADLINE=400.
# l56's compiled tests (the scan against the XLA twin with a loss of the outputs only, the
# unwritten cotangent's case, and the float32 default), then `sdm_small`'s step, one
# process each, two rounds: m56 (main), l56 (lazy-table-cotangent). About 300 s on a host
# like 55a's. The deadline cuts from the end.
source experiments/device/common.sh
step tests_l56 120 devrun/l56 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q \
  -m gpu tests/pallas_kernels/sparse_delta/test_scan_pallas.py \
  -k "loss_of_the_outputs or (float32 and compiled)"
step_rounds "a b" m56 l56
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
