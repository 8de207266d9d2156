# Run here (not on the device), from the repository root: makes devrun/ for call 59a
# (`carry=[".whl", "devrun"]`): m59 = main (session 58's few-rows top-k default; the
# training step's top-k runs 32,768 rows, so its step is m58's).
set -eu
source experiments/device/copies.sh  # main_only
main_only m59 pallas_kernels/product_key/topk_pallas.py "^FEW_ROWS_MAX = 128$"
