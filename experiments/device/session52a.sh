# Session 52's first call. DEADLINE=560, carry .whl and devrun, run from main's checkout:
# devrun/m52 = `git archive` of main at this script's parent commit, devrun/h52 = branch
# entry-sums-held with `held_entry_depth=32` (the union's per-entry coefficient gradients
# held in a [rows, C] array and stored once per tile at C = 16: XLA's build for the H200 has
# no barrier in the segment loops, against two a step on main, but 121 registers and 4
# programs per SM against 80 and 6, loop bodies 137 / 145 / 140 instructions against 120 /
# 126 / 122).
# `sdm_small`'s step, one process each, alternating with `gdn_small`'s (the issue-11 ratio),
# two rounds; then the branch's compiled tests. The deadline cuts from the end.
source experiments/device/common.sh
GDN_TREE=m52 step_rounds "a b" m52 h52
step tests_h52 120 devrun/h52 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q \
  -n 4 -m gpu tests/pallas_kernels/sparse_delta/test_scan_pallas.py -k "held or prefetch"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
