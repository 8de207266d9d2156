# Run here (not on the device), from the repository root: makes devrun/ for call 63b
# (`carry=[".whl", "devrun"]`): m63 = main; c63 = branch `candidates-part-by-part` (the top-k's
# candidate parts formed and stored one at a time: fewer registers in XLA's build).
set -eu
source experiments/device/copies.sh  # main_only, archive
main_only m63 pallas_kernels/product_key/topk_pallas.py "exact_order: bool = True"
! grep -q "exact_pass" devrun/m63/pallas_kernels/product_key/topk_pallas.py
archive c63 candidates-part-by-part
grep -q "for part, start in enumerate(starts):" devrun/c63/pallas_kernels/product_key/topk_pallas.py
du -sh devrun
