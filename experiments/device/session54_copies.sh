# Run here (not on the device), from the repository root: makes devrun/ for calls 54a and
# 54b (`carry=[".whl", "devrun"]`), each tree a `git archive` of a branch: m54 (main), f54
# (slot-lanes-forward: the pair-weight forward walks the entries in slot order, 128 lanes
# a block), fr54 (read-lanes-backward, on f54: QK's pair-weight backward on a lane per entry
# and per write), d54 (dense-pair-grads: the backward's dense kernel sums the QK and solve
# gradients per slab) and c54 (contract-kernel: those gradients by a Pallas kernel after
# the scan). Where a branch is missing (a new checkout keeps main only), it is made from
# experiments/device/branches/<branch>.patch (`git format-patch`, on BASE).
set -eu
BASE=aeb6062debf2602bf3590c937607018dded4d111
source experiments/device/copies.sh  # archive, branch_from_patch
branch_from_patch slot-lanes-forward $BASE
branch_from_patch read-lanes-backward slot-lanes-forward
branch_from_patch dense-pair-grads $BASE
branch_from_patch contract-kernel $BASE
rm -rf devrun && mkdir devrun
archive m54 main
archive f54 slot-lanes-forward
grep -q "lanes=max(16, config.forward_block // chunk)" devrun/f54/pallas_kernels/sparse_delta/pair_weights.py
archive fr54 read-lanes-backward
grep -q "def _lanes_bwd_kernel" devrun/fr54/pallas_kernels/sparse_delta/pair_weights.py
archive d54 dense-pair-grads
grep -q "def _dense_pair_grads" devrun/d54/pallas_kernels/sparse_delta/scan_pallas.py
archive c54 contract-kernel
grep -q "def _pair_gradient_kernel" devrun/c54/pallas_kernels/sparse_delta/scan_pallas.py
du -sh devrun .whl || true  # .whl: the wheels the device calls carry
