# Not run in session 47 (loans paused); ready: DEADLINE=590, carry .whl and devrun/m47, f47,
# e47, p47. Session 47's three untimed branches against main in one call, run from main's
# checkout. Copies, each `git archive <tree> pallas_kernels sdm_jax maglev_jax
# experiments pyproject.toml tests | tar -x -C devrun/<name>`:
#   m47: 8896f39 (main's kernels); f47: branch fold-sign (d_r0's sign on the scalars,
#   fused multiply-adds); e47: branch empty-tiles (row tiles past the chunk's slots
#   return at once); p47: branch entry-perms (the glue's permutations declared).
# `sdm_small`'s step, one process each, alternating; then the compiled tests of f47, then
# of e47 (skipped if the deadline is near).
source experiments/device/common.sh
STEP="python -m experiments.bench_ops --op=train_step --train_configs=sdm_small --repeats=10"
for round in a b; do
  for tree in f47 m47 e47 p47; do
    step "s_${tree}_$round" 75 "devrun/$tree" $STEP
  done
done
step tests_f47 100 devrun/f47 python -m pytest -q -m gpu tests/pallas_kernels/sparse_delta/test_scan_pallas.py tests/pallas_kernels/test_platform.py
step tests_e47 100 devrun/e47 python -m pytest -q -m gpu tests/pallas_kernels/sparse_delta/test_scan_pallas.py
grep -o '"config": "[^"]*".*"step_back_to_back_ms": [0-9.]*' "$OUT"/s_*.log >> "$OUT/calls.log"
cat "$OUT"/s_*.log > "$OUT/steps.log"; rm -f "$OUT"/s_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
