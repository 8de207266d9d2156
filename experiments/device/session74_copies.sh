# Run here (not on the device), from the repository root with branch frontier-overlap checked
# out: makes devrun/ for call 74a (`carry=[".whl", "devrun"]`): topk_main = main (bb2c276),
# whose halves' rounds all run before the frontier's; the root (the branch) runs them inside
# the frontier's rounds, the halves' round first in the loop body; topk_later = the branch with
# the halves' round after the frontier's pick (and its tie branch), b1a243f~1.
set -eu
source experiments/device/copies.sh  # archive
rm -rf devrun && mkdir devrun
archive topk_main main
archive topk_later b1a243f~1
grep -q "round_with_halves" pallas_kernels/product_key/topk_pallas.py
! grep -q "round_with_halves" devrun/topk_main/pallas_kernels/product_key/topk_pallas.py
du -sh devrun .whl
