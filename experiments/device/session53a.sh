# Session 53's first call. DEADLINE=560, carry .whl and devrun (`bash
# experiments/device/session53_copies.sh`), run from main's checkout.
# `sdm_small`'s step, one process each, two rounds: m53 (main: the pair weights' terms
# summed once per entry block, session 52), s53 (the forward scatter on 2 warps: XLA's
# build 72 registers, 14 programs per SM, 2.2 waves, against 48, 10, 3.1 on 4), t53 (the
# union on 16-row tiles and 2 warps: 93 registers, 10 programs per SM, against 80 and 6 on
# 32 rows and 4 warps, about the same warp-instructions per row); `gdn_small` each round for the
# ratio (on the H200 it has not been measured since session 47); then s53's compiled
# tests. The deadline cuts from the end.
source experiments/device/common.sh
GDN_TREE=m53 step_rounds "a b" m53 s53 t53
step tests_s53 60 devrun/s53 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q \
  -n 4 -m gpu tests/pallas_kernels/sparse_delta/test_scan_pallas.py -k "scatter_warps"
step tests_t53 60 devrun/t53 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q \
  -n 4 -m gpu tests/pallas_kernels/sparse_delta/test_scan_pallas.py -k "backward_rows_tile"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
