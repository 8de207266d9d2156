# Not run in session 47 (loans paused); ready: DEADLINE=420, carry .whl, devrun/m47.
# Session 47, call c (issue 11), run from the fold-sign branch's checkout: the segment loops
# with d_r0's sign on the per-row scalars and each term added by one fused multiply-add
# (XLA's build: union loops 159/140/139 -> 127/123/121 instructions, scatter 85 -> 67,
# registers unchanged), against main (devrun/m47 = `git archive 8896f39 pallas_kernels
# sdm_jax maglev_jax experiments pyproject.toml`), `sdm_small`'s step, one process each,
# alternating; then the compiled phase-2 tests and the compiled fused multiply-add's.
source experiments/device/common.sh
STEP="python -m experiments.bench_ops --op=train_step --train_configs=sdm_small --repeats=10"
step s_branch_a 75 . $STEP
step s_main_a 75 devrun/m47 $STEP
step s_branch_b 75 . $STEP
step s_main_b 75 devrun/m47 $STEP
step tests 140 . python -m pytest -q -m gpu tests/pallas_kernels/sparse_delta/test_scan_pallas.py tests/pallas_kernels/test_platform.py
grep -o '"config": "[^"]*".*"step_back_to_back_ms": [0-9.]*' "$OUT"/s_*.log >> "$OUT/calls.log"
cat "$OUT"/s_*.log > "$OUT/steps.log"; rm -f "$OUT"/s_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
