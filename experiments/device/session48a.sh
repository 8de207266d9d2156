# Session 48's first call (loans paused in sessions 47 and 48, so not run yet); it replaces
# 47d. DEADLINE=590, carry .whl and devrun/a48, m47, f47, e47, p47, run from main's
# checkout. Each copy is `git archive <tree> pallas_kernels sdm_jax maglev_jax experiments
# pyproject.toml tests | tar -x -C devrun/<name>`:
#   a48: branch all-cuts (the three below together); m47: 8896f39 (main's kernels);
#   f47: branch fold-sign (d_r0's sign on the scalars, fused multiply-adds); e47: branch
#   empty-tiles (row tiles past the chunk's slots return at once); p47: branch entry-perms
#   (the glue's permutations declared).
# First the compiled tests of a48 (they cover fold-sign's and empty-tiles' kernels), then
# `sdm_small`'s step, one process each, alternating; the deadline cuts round b's tail.
source experiments/device/common.sh
step tests_a48 110 devrun/a48 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q -n 8 -m gpu tests/pallas_kernels/sparse_delta/test_scan_pallas.py tests/pallas_kernels/test_platform.py
step_rounds "a b" a48 m47 f47 e47 p47
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
