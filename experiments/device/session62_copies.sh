# Run here (not on the device), from the repository root: makes devrun/ for call 62a
# (`carry=[".whl", "devrun"]`): m62 = main, checked to time the top-k inside scans
# (`SCAN_STEPS` in topk_benchmarks) and to take the kernel at any row count; u62 = branch
# `untaken-by-subtraction` at 2451d20 (a groups reload's untaken entries by one subtraction).
set -eu
source experiments/device/copies.sh  # main_only, archive
main_only m62 sdm_jax/evaluation/topk_benchmarks.py "SCAN_STEPS = 64"
! grep -q "AUTO_KERNEL_MIN_ROWS" devrun/m62/sdm_jax/ops/product_key.py
archive u62 2451d20  # branch untaken-by-subtraction, merged into main
grep -q "keys - after < state.top" devrun/u62/pallas_kernels/product_key/topk_pallas.py
du -sh devrun
