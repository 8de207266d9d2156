# Session 57's third call: calls 56c and 56e in one (the warm machine from 56a/56b; devrun
# from session56_copies.sh). DEADLINE=560, carry .whl and devrun. l56's compiled tests
# (a loss of the outputs only against the XLA twin), o56's (bf16 outputs against the XLA
# twin), then `sdm_small`'s step, one process each, two rounds: m56 (main), l56
# (lazy-table-cotangent), o56 (bf16-outputs). About 300 s. The deadline cuts from the end.
source experiments/device/common.sh
step tests_l56 120 devrun/l56 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q \
  -m gpu tests/pallas_kernels/sparse_delta/test_scan_pallas.py \
  -k "loss_of_the_outputs or (float32 and compiled)"
step tests_o56 120 devrun/o56 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q \
  -m gpu tests/pallas_kernels/sparse_delta/test_scan_pallas.py \
  -k "bfloat16_outputs or (float32 and compiled)"
step_rounds "a b" m56 l56 o56
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
