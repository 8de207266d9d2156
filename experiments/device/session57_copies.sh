# Run here (not on the device), from the repository root, after session56_copies.sh: adds
# devrun/mg57 for call 57c, branch sdm-glue-57 (main with batch-copies and bf16-outputs
# merged and `KernelConfig.scan_unroll` 16: each won alone on an H100 in calls 56a, 56b and
# 57a).
set -eu
source experiments/device/copies.sh  # archive
archive mg57 sdm-glue-57
grep -q "def batch_copies" devrun/mg57/pallas_kernels/sparse_delta/batch_copies.py
grep -q "OUT_DTYPES = " devrun/mg57/pallas_kernels/sparse_delta/scan_pallas.py
grep -q "^  scan_unroll: int = 16$" devrun/mg57/pallas_kernels/sparse_delta/scan_pallas.py
