# Session 53's second call, on the machine 53a left warm (same devrun). DEADLINE=560,
# carry .whl and devrun. `sdm_small`'s step, one process each, two rounds: m53 (main) and
# c53 (branch contract-tf32x3: the backward's QK and solve gradient contractions at TF32x3,
# which cuBLAS ran on CUDA cores at full float32, 0.34 ms a step on an H100); c53's
# float32-table scan tests (1e-5 against the XLA twin); then m53's per-op profile with its
# HLO (what each kernel costs after session 52's merge). The deadline cuts from the end.
source experiments/device/common.sh
step_rounds "a b" m53 c53
step tests_c53 60 devrun/c53 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q \
  -n 4 -m gpu tests/pallas_kernels/sparse_delta/test_scan_pallas.py -k "scan_unroll=1"
step_profile m53 150
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
