# Run here (not on the device), from the repository root: makes devrun/ for call 64d
# (`carry=[".whl", "devrun"]`): m64 = main; l64 = branch `lazy-residuals`; e64 = branch
# `exact-sums` (lazy-residuals, with the residuals skipped where every sum is exact).
set -eu
source experiments/device/copies.sh  # main_only, archive
main_only m64 experiments/device/time_topk_flagged.py "bf16_grid"
archive l64 lazy-residuals
archive e64 exact-sums
grep -q "some_inexact" devrun/e64/pallas_kernels/product_key/topk_pallas.py
du -sh devrun
