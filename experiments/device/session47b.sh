# Session 47, call b (issue 11), run from the empty-tiles branch's checkout: row tiles past
# the chunk's slots return at once (forward scatter, union backward), against main
# (devrun/m47 = `git archive 8896f39 pallas_kernels sdm_jax maglev_jax experiments
# pyproject.toml`), `sdm_small`'s step, one process each, alternating; then the compiled
# phase-2 tests.
source experiments/device/common.sh
STEP="python -m experiments.bench_ops --op=train_step --train_configs=sdm_small --repeats=10"
step s_branch_a 75 . $STEP
step s_main_a 75 devrun/m47 $STEP
step s_branch_b 75 . $STEP
step s_main_b 75 devrun/m47 $STEP
step tests 130 . python -m pytest -q -m gpu tests/pallas_kernels/sparse_delta/test_scan_pallas.py
grep -o '"config": "[^"]*".*"step_back_to_back_ms": [0-9.]*' "$OUT"/s_*.log >> "$OUT/calls.log"
cat "$OUT"/s_*.log > "$OUT/steps.log"; rm -f "$OUT"/s_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
