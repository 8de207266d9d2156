# Run here (not on the device), from the repository root: makes devrun/ for call 70b
# (`carry=[".whl", "devrun"]`): topk_rounds = ec122ad, main before session 70 (the frontier's
# first pick without a round); the repository root is main with session 70's two changes
# (the tail heads' scores from their keys; the group bests on the float scores from S =
# 1,024 on, `KernelConfig.float_group_bests`).
set -eu
source experiments/device/copies.sh  # archive
rm -rf devrun && mkdir devrun
archive topk_rounds ec122ad
grep -q "float_group_bests" pallas_kernels/product_key/topk_pallas.py
! grep -q "float_group_bests" devrun/topk_rounds/pallas_kernels/product_key/topk_pallas.py
du -sh devrun .whl
