# Session 53's second call (after 53a, same devrun). DEADLINE=560, carry .whl and devrun.
# `sdm_small`'s step, one process each, two rounds: m53 (main), c53 (branch
# contract-tf32x3: the backward's QK and solve gradient contractions at TF32x3, which
# cuBLAS ran on CUDA cores at full float32, 0.34 ms a step on an H100) and o53 (branch
# pair-own-writes: A's pair-weight backward as one lane per write walking its segment,
# no one-hot matmuls or per-row cells; XLA's build 64 registers, 8 programs per SM, one
# 180-instruction loop, 16,384 programs against 34,816 row tiles at 95 registers); o53's
# compiled pair-weight tests and c53's float32-table scan tests (1e-5 against the XLA
# twin); then m53's per-op profile with its HLO (what the pair weights
# cost after session 52's merge; before it one backward launch took about 0.78 ms on an
# H100 and the other 0.10). The deadline cuts from the end.
source experiments/device/common.sh
step_rounds "a b" m53 o53 c53
step tests_o53 60 devrun/o53 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q \
  -n 4 -m gpu tests/pallas_kernels/sparse_delta/test_pair_weights.py
step tests_c53 60 devrun/c53 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q \
  -n 4 -m gpu tests/pallas_kernels/sparse_delta/test_scan_pallas.py -k "scan_unroll=1"
step_profile m53 150
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
