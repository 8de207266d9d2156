# Run here (not on the device), from the repository root: makes devrun/ for call 58a
# (`carry=[".whl", "devrun"]`): m58 = main (session 57's merges: the copies kernel, bf16
# outputs, chunk loops unrolled 16).
set -eu
source experiments/device/copies.sh  # main_only
main_only m58 pallas_kernels/sparse_delta/scan_pallas.py "^  scan_unroll: int = 16$"
