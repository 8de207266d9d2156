# Run here (not on the device), from the repository root: makes devrun/ for call 59b
# (`carry=[".whl", "devrun"]`): m59 = main; from branch `threshold-early-exit`, e59 = its
# first commit (the threshold selections' bit counts stop once exactly k keys reach the
# cut) and r59 = the branch (also the ranks counted by key alone where keys are distinct).
set -eu
source experiments/device/copies.sh  # main_only, archive, branch_from_patch
branch_from_patch threshold-early-exit main
main_only m59 pallas_kernels/product_key/topk_pallas.py "^FEW_ROWS_MAX = 128$"
archive e59 threshold-early-exit~3
archive r59 threshold-early-exit
grep -q "def more_bits" devrun/e59/pallas_kernels/product_key/topk_pallas.py
! grep -q "def by_key_and_id" devrun/e59/pallas_kernels/product_key/topk_pallas.py
grep -q "def by_key_and_id" devrun/r59/pallas_kernels/product_key/topk_pallas.py
du -sh devrun
