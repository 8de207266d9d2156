# Run here (not on the device), from the repository root: makes devrun/ for call 69a
# (`carry=[".whl", "devrun"]`): topk_main = 5adb527 (the frontier that stored its
# candidates); topk_logits = branch `frontier-logits` (main at b962089 plus the frontier
# storing each pick's logit as it picks); main runs from the repository root.
set -eu
source experiments/device/copies.sh  # archive, branch_from_patch
branch_from_patch frontier-logits b962089
rm -rf devrun && mkdir devrun
archive topk_main 5adb527
archive topk_logits frontier-logits
grep -q "def frontier_layout" devrun/topk_main/pallas_kernels/product_key/topk_pallas.py
grep -q "the frontier stores the logits as it picks" \
  devrun/topk_logits/pallas_kernels/product_key/topk_pallas.py
du -sh devrun .whl
