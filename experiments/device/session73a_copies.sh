# Run here (not on the device), from the repository root: makes devrun/ for call 73a
# (`carry=[".whl", "devrun"]`): topk_fc = branch frontier-check at a2d29a8 (the frontier by
# (key, slot) with the tournament's check and fallback, `frontier_check=true`, with the last
# pick left out of its heads). The branch from experiments/device/branches/ where missing.
set -eu
source experiments/device/copies.sh  # archive, branch_from_patch
branch_from_patch frontier-check e6a8679
rm -rf devrun && mkdir devrun
archive topk_fc frontier-check
grep -q "frontier_check: bool" devrun/topk_fc/pallas_kernels/product_key/topk_pallas.py
du -sh devrun .whl
