# Session 52's second call. DEADLINE=560, carry .whl and devrun, run from main's checkout:
# devrun/m52 = `git archive` of main; devrun/pb52 = main with branch pair-terms-summed's
# pair-weights backward kernel (each writer's cell terms placed in an [entries, C] array
# and summed into the rows' cells by one one-hot matmul per entry block after the writer
# loop, instead of three bf16 matmuls at every writer step; XLA's build: 95 registers, 5
# programs per SM, against 103 and 4, the writer loop 118 instructions against 220);
# devrun/pf52 = the branch whole (the forward kernel's terms also placed over the writers
# and summed over the entries once: 96 registers, 5 per SM, against 56 and 9).
# `sdm_small`'s step, one process each, two rounds, `gdn_small` once; then the branch's
# compiled pair-weight tests. The deadline cuts from the end.
source experiments/device/common.sh
GDN_TREE=m52 step_rounds a m52 pb52 pf52
step_rounds b m52 pb52 pf52
step tests_pf52 100 devrun/pf52 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q \
  -n 4 -m gpu tests/pallas_kernels/sparse_delta/test_pair_weights.py
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
