# Run here (not on the device), from the repository root: makes devrun/ for call 53d
# (`carry=[".whl", "devrun"]`): m54 (main after session 53's merges of pair-own-writes and
# contract-tf32x3), d54 (branch dense-pair-grads: the backward's dense kernel sums the QK
# and solve gradients per slab) and df54 (branch slot-lanes-forward, on d54: the
# pair-weight forward walks the entries in slot order).
# As it ran for call 53d. The branches it archives no longer exist in that form:
# session54_copies.sh makes session 54's trees from experiments/device/branches/*.patch.
set -eu
source experiments/device/copies.sh  # archive
rm -rf devrun && mkdir devrun
archive m54 main
archive d54 dense-pair-grads
grep -q "def _dense_pair_grads" devrun/d54/pallas_kernels/sparse_delta/scan_pallas.py
archive df54 slot-lanes-forward
grep -q "def _dense_pair_grads" devrun/df54/pallas_kernels/sparse_delta/scan_pallas.py
grep -q "lanes=max(16, config.forward_block // chunk)" \
  devrun/df54/pallas_kernels/sparse_delta/pair_weights.py
du -sh devrun .whl
