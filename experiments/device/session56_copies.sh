# Run here (not on the device), from the repository root: makes devrun/ for call 56a
# (`carry=[".whl", "devrun"]`): m56 (main), b56 (branch batch-copies: the shared table's
# per-sequence copies by a Pallas kernel instead of XLA's broadcast) and u56 (main with
# `KernelConfig.scan_unroll` 16 instead of 4: the chunk loops' per-trip index slice and
# counter, 256 launches a step at 4, 64 at 16). Where batch-copies is
# missing (a new checkout keeps main only), it is made from
# experiments/device/branches/batch-copies.patch (on b9681d0).
set -eu
source experiments/device/copies.sh  # archive, branch_from_patch
branch_from_patch batch-copies b9681d0
rm -rf devrun && mkdir devrun
archive m56 main
archive b56 batch-copies
grep -q "def batch_copies" devrun/b56/pallas_kernels/sparse_delta/batch_copies.py
archive u56 main
sed -i 's/^  scan_unroll: int = 4$/  scan_unroll: int = 16/' devrun/u56/pallas_kernels/sparse_delta/scan_pallas.py
grep -q "^  scan_unroll: int = 16$" devrun/u56/pallas_kernels/sparse_delta/scan_pallas.py
du -sh devrun .whl || true  # .whl: the wheels the device calls carry
