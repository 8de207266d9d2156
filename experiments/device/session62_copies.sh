# Run here (not on the device), from the repository root: makes devrun/ for call 62a
# (`carry=[".whl", "devrun"]`): m62 = main, checked to time the top-k inside scans
# (`SCAN_STEPS` in topk_benchmarks) and to take the kernel at any row count.
set -eu
source experiments/device/copies.sh  # main_only
main_only m62 sdm_jax/evaluation/topk_benchmarks.py "SCAN_STEPS = 64"
! grep -q "AUTO_KERNEL_MIN_ROWS" devrun/m62/sdm_jax/ops/product_key.py
