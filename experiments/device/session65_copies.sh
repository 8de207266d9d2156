# Run here (not on the device), from the repository root: makes devrun/ for call 65c
# (`carry=[".whl", "devrun"]`): m65 = main (exact-sums merged); x65 = branch
# `fast-exact-test` (the candidates' exactness check by Fast2Sum's test); c65 = branch
# `count-if-inexact` (on x65: no tie counts where every sum is exact).
set -eu
source experiments/device/copies.sh  # main_only, archive, branch_from_patch
# A new checkout keeps main only: the branches from their patches (on main at b3e7114).
branch_from_patch fast-exact-test b3e7114
branch_from_patch count-if-inexact fast-exact-test
main_only m65 pallas_kernels/product_key/topk_pallas.py "some_inexact"
archive x65 fast-exact-test
archive c65 count-if-inexact
grep -q "def _sum_is_exact" devrun/x65/pallas_kernels/product_key/topk_pallas.py
grep -q "def tie_in_some_row" devrun/c65/pallas_kernels/product_key/topk_pallas.py
du -sh devrun
