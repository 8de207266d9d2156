# Run here (not on the device), from the repository root: makes devrun/ for calls 68a-68c
# (`carry=[".whl", "devrun"]`): main's tree at BASE (5adb527: the frontier that stores its
# candidates) in devrun/topk_main; the branch under test runs from the repository root.
set -eu
source experiments/device/copies.sh  # archive
rm -rf devrun && mkdir devrun
archive topk_main "${BASE:-5adb527}"
grep -q "def frontier_layout" devrun/topk_main/pallas_kernels/product_key/topk_pallas.py
du -sh devrun .whl
