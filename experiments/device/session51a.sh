# Session 51's first call. DEADLINE=585, carry .whl and devrun (`bash
# experiments/device/session51_copies.sh`: m49, m50 = main before deepest-first merged, and
# the session-51 branches with their field on: t51 deepest-first, b51p4 bwd-gather-parts at
# 4 parts, c51 both), run from main's checkout.
# `sdm_small`'s step, one process each, one round: m50 (main: all-cuts and 2-warp gathers
# merged, never timed as one tree), t51 (the row-tile kernels' deepest tiles of every slab
# launched first: XLA's build 16 more instructions in the union, registers the same), b51p4
# (the backward gather in 4 parts: XLA's build for the H200 has 56 registers, 18 programs
# per SM, against main's 96 and 10, so 0.86 waves of 2,048 programs against 1.55; 2 parts:
# 72, 14, 1.1 waves, not timed), c51 (both: branch stack51), m49 (main before session
# 50's merges); `gdn_small` for the ratio; the compiled tests of both branches; then m50's per-op
# profile with its HLO. The deadline cuts from the end.
source experiments/device/common.sh
step_rounds a m50 t51 b51p4 c51 m49
step s_gdn 75 devrun/m49 python -m experiments.bench_ops --op=train_step --train_configs=gdn_small --repeats=10
collect_steps
step tests_b51 100 devrun/b51p4 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q \
  -n 4 -m gpu tests/pallas_kernels/sparse_delta/test_scan_pallas.py -k "parts or gather_warps"
step tests_t51 100 devrun/t51 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q \
  -n 4 -m gpu tests/pallas_kernels/sparse_delta/test_scan_pallas.py -k "deepest or separate"
step_profile m50 150
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
