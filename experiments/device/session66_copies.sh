# Run here (not on the device), from the repository root: makes devrun/ for call 66a
# (`carry=[".whl", "devrun"]`): m66 = main; o66 = branch `count-on-main` (count-if-inexact's
# change alone on main: no tie counts where every candidate's sum is exact, main's TwoSum
# exactness check kept).
set -eu
source experiments/device/copies.sh  # main_only, archive, branch_from_patch
branch_from_patch count-on-main 6fc0691
main_only m66 pallas_kernels/product_key/topk_pallas.py "some_inexact"
archive o66 count-on-main
grep -q "def tie_in_some_row" devrun/o66/pallas_kernels/product_key/topk_pallas.py
! grep -q "def _sum_is_exact" devrun/o66/pallas_kernels/product_key/topk_pallas.py
du -sh devrun
