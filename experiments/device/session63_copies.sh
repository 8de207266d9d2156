# Run here (not on the device), from the repository root: makes devrun/ for call 63a
# (`carry=[".whl", "devrun"]`): m63 = main, checked to hold `exact_pass` (the top-k's exact
# order made by a second launch, built in session 62, untimed).
set -eu
source experiments/device/copies.sh  # main_only
main_only m63 pallas_kernels/product_key/topk_pallas.py 'exact_pass: str = "in_kernel"'
