# Run here (not on the device), from the repository root: makes devrun/ for call 59b
# (`carry=[".whl", "devrun"]`): m59 = main before the branch merged (28ac3a4); from branch
# `threshold-early-exit` (made from its patch where missing), e59 = its first commit (the
# threshold selections' bit counts stop once exactly k keys reach the cut) and r59 = the
# branch (also the ranks counted by key alone where keys are distinct).
set -eu
source experiments/device/copies.sh  # main_only, archive, branch_from_patch
branch_from_patch threshold-early-exit 28ac3a4
rm -rf devrun && mkdir devrun
archive m59 28ac3a4
archive e59 threshold-early-exit~3
archive r59 threshold-early-exit
grep -q "def more_bits" devrun/e59/pallas_kernels/product_key/topk_pallas.py
! grep -q "def by_key_and_id" devrun/e59/pallas_kernels/product_key/topk_pallas.py
grep -q "def by_key_and_id" devrun/r59/pallas_kernels/product_key/topk_pallas.py
! grep -q "def more_bits" devrun/m59/pallas_kernels/product_key/topk_pallas.py
du -sh devrun
