# Run here (not on the device), from the repository root: makes devrun/ for call 60a
# (`carry=[".whl", "devrun"]`): m60 = main, with branch `threshold-early-exit` merged (59b's
# r59), and m59 = main before the merge (28ac3a4).
set -eu
source experiments/device/copies.sh  # main_only, archive
main_only m60 pallas_kernels/product_key/topk_pallas.py "def by_key_and_id"
archive m59 28ac3a4
! grep -q "def by_key_and_id" devrun/m59/pallas_kernels/product_key/topk_pallas.py
du -sh devrun
