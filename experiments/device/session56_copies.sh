# Run here (not on the device), from the repository root: makes devrun/ for calls 56a-56c
# and 56e (56d needs none)
# (`carry=[".whl", "devrun"]`): m56 (main), b56 (branch batch-copies: the shared table's
# per-sequence copies by a Pallas kernel instead of XLA's broadcast), k56 (branch
# key-grads-in-kernel: the QK pair weights' backward picks each write's key gradient on
# chip instead of storing every [rows, C] cell for XLA to gather), u56 (main with
# `KernelConfig.scan_unroll` 16 instead of 4: the chunk loops' per-trip index slice and
# counter, 256 launches a step at 4, 64 at 16), all56 (those three together), l56 (branch
# lazy-table-cotangent: the backward starts the table's cotangent unwritten where no
# cotangent reaches the final table, instead of filling [B*H, N, Dv] zeros) and o56 (branch
# bf16-outputs: phase 2 stores the outputs in v's dtype and reads their cotangent in it).
# Where a branch is missing (a new checkout keeps main only), it is made from
# experiments/device/branches/<branch>.patch (batch-copies and key-grads-in-kernel on
# 46a27a8, lazy-table-cotangent on a71d4e7 and bf16-outputs on 03cd9c2, whose code is
# 46a27a8's).
set -eu
source experiments/device/copies.sh  # archive, branch_from_patch
branch_from_patch batch-copies 46a27a8
branch_from_patch key-grads-in-kernel 46a27a8
branch_from_patch lazy-table-cotangent a71d4e7
branch_from_patch bf16-outputs 03cd9c2
rm -rf devrun && mkdir devrun
archive m56 main
archive b56 batch-copies
grep -q "def batch_copies" devrun/b56/pallas_kernels/sparse_delta/batch_copies.py
archive k56 key-grads-in-kernel
grep -q "def _store_writers_cells" devrun/k56/pallas_kernels/sparse_delta/pair_weights.py
unroll16() {
  sed -i 's/^  scan_unroll: int = 4$/  scan_unroll: int = 16/' "devrun/$1/pallas_kernels/sparse_delta/scan_pallas.py"
  grep -q "^  scan_unroll: int = 16$" "devrun/$1/pallas_kernels/sparse_delta/scan_pallas.py"
}
archive u56 main
unroll16 u56
# all56: batch-copies with key-grads-in-kernel's commits applied (they touch other files) and
# the unroll edited.
archive all56 batch-copies
patch -s -p1 -d devrun/all56 < experiments/device/branches/key-grads-in-kernel.patch
grep -q "def _store_writers_cells" devrun/all56/pallas_kernels/sparse_delta/pair_weights.py
unroll16 all56
archive l56 lazy-table-cotangent
grep -q "def _mark_seen" devrun/l56/pallas_kernels/sparse_delta/scan_pallas.py
archive o56 bf16-outputs
grep -q "OUT_DTYPES = " devrun/o56/pallas_kernels/sparse_delta/scan_pallas.py
du -sh devrun .whl || true  # .whl: the wheels the device calls carry
