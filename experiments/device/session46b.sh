# Session 46, call b (issue 11), run from the unique-perms branch's checkout: that branch
# (phase 1's gathers and scatters by write_order declared permutations) against main
# (devrun/m46 = `git archive main pallas_kernels sdm_jax maglev_jax experiments
# pyproject.toml`) and the stagger branch with `stagger=True` as the default (devrun/g46,
# `git archive stagger` of the same plus tests, default edited), one process each,
# alternating; then the stagger branch's compiled scan tests with stagger.
source experiments/device/common.sh
STEP="python -m experiments.bench_ops --op=train_step --train_configs=sdm_small --repeats=10"
step s_branch_a 75 . $STEP
step s_main_a 75 devrun/m46 $STEP
step s_stagger_a 75 devrun/g46 $STEP
step s_branch_b 75 . $STEP
step s_main_b 75 devrun/m46 $STEP
step s_stagger_b 75 devrun/g46 $STEP
step tests 90 devrun/g46 python -m pytest -q -m gpu tests/pallas_kernels/sparse_delta/test_scan_pallas.py -k stagger
grep -o '"config": "[^"]*".*"step_back_to_back_ms": [0-9.]*' "$OUT"/s_*.log >> "$OUT/calls.log"
cat "$OUT"/s_*.log > "$OUT/steps.log"; rm -f "$OUT"/s_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
