# Run here (not on the device), from the repository root: makes devrun/ for call 64b
# (`carry=[".whl", "devrun"]`): m64 = main; l64 = branch `lazy-residuals` (the frontier's
# candidates without residuals; a round computes them only where heads share the best key).
set -eu
source experiments/device/copies.sh  # main_only, archive
main_only m64 pallas_kernels/product_key/topk_pallas.py "form_parts_together: bool = True"
archive l64 lazy-residuals
grep -q "def _break_key_ties" devrun/l64/pallas_kernels/product_key/topk_pallas.py
du -sh devrun
