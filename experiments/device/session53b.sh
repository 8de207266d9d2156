# Session 53's third call (after 53a and 53c; devrun from session53_copies.sh). DEADLINE=560,
# carry .whl and devrun. `sdm_small`'s step, one process each, two rounds: m53 (main), o53
# (branch pair-own-writes: A's pair-weight backward as one lane per write walking its
# segment, no one-hot matmuls or per-row cells; A's backward took 0.85 ms of the step in
# 53c's profile) and oc53 (branch own-writes-tf32x3: o53 with c53's TF32x3 contractions,
# -0.15 ms in 53c); o53's compiled pair-weight tests and c53's float32-table scan tests
# (1e-5 against the XLA twin; one process: `-n 4` found no workers for 2 tests in 53c);
# then oc53's per-op profile with its HLO. The deadline cuts from the end.
source experiments/device/common.sh
step_rounds "a b" m53 o53 oc53
step tests_o53 90 devrun/o53 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q \
  -m gpu tests/pallas_kernels/sparse_delta/test_pair_weights.py
step tests_c53 90 devrun/c53 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q \
  -m gpu tests/pallas_kernels/sparse_delta/test_scan_pallas.py -k "scan_unroll=1"
step_profile oc53 150
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
