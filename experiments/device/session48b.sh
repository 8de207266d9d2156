# Session 48's second call (not run: loans paused). DEADLINE=590, carry .whl and devrun/m47,
# g48w2, g48w1, run from main's checkout. The gather kernels on fewer warps (branch
# gather-warps, `KernelConfig.gather_warps`): g48w2 and g48w1 are `git archive gather-warps
# pallas_kernels sdm_jax maglev_jax experiments pyproject.toml tests | tar -x -C
# devrun/<name>` with the field's default edited to 2 and 1 (`sed -i 's/^  gather_warps:
# int | None = None$/  gather_warps: int | None = 2/'` on
# pallas_kernels/sparse_delta/scan_pallas.py); m47 is main's kernels (script 48a).
# First the branch's compiled cases of the gather warps, then `sdm_small`'s step, one
# process each, alternating.
source experiments/device/common.sh
step tests_g48 90 devrun/g48w2 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q -n 2 -m gpu tests/pallas_kernels/sparse_delta/test_scan_pallas.py -k gather_warps
step_rounds "a b c" g48w2 m47 g48w1
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
