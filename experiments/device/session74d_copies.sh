# Run here (not on the device), from the repository root with branch no-ranks-operand checked
# out: makes devrun/ for call 74d (`carry=[".whl", "devrun"]`): topk_main = main with this
# branch's experiments/device/profile_topk.py.
set -eu
source experiments/device/copies.sh  # archive
rm -rf devrun && mkdir devrun
archive topk_main main
cp experiments/device/profile_topk.py devrun/topk_main/experiments/device/
grep -q "operands = (rows,)" pallas_kernels/product_key/topk_pallas.py
! grep -q "operands = (rows,)" devrun/topk_main/pallas_kernels/product_key/topk_pallas.py
du -sh devrun .whl
