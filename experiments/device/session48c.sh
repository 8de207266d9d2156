# Session 48's third call (not run: loans paused). DEADLINE=590, carry .whl and devrun/a48,
# r48, a48c32, run from main's checkout. The union backward holding fewer registers (branch
# reload-rows, on top of all-cuts: its segment loops load the tile's table rows again at
# each step; XLA's build 72 registers and 7 programs per SM against 80 and 6) against
# all-cuts, and all-cuts with chunks of 32 (lost 2.1 ms in session 28, mostly in the pair
# weights, rewritten since). Copies: `git archive <all-cuts | reload-rows> pallas_kernels
# sdm_jax maglev_jax experiments pyproject.toml tests | tar -x -C devrun/<a48 | r48>`;
# a48c32 is a48 with `sdm_chunk_size=32` in experiments/configs/sdm_small.py. First r48's
# compiled phase-2 tests, then `sdm_small`'s step, one process each, alternating.
source experiments/device/common.sh
step tests_r48 110 devrun/r48 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q -n 8 -m gpu tests/pallas_kernels/sparse_delta/test_scan_pallas.py
step_rounds "a b c" r48 a48 a48c32
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
