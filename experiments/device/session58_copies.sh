# Run here (not on the device), from the repository root: makes devrun/ for call 58a
# (`carry=[".whl", "devrun"]`): m58 = main (session 57's merges: the copies kernel, bf16
# outputs, chunk loops unrolled 16).
set -eu
source experiments/device/copies.sh  # archive
rm -rf devrun && mkdir devrun
archive m58 main
grep -q "^  scan_unroll: int = 16$" devrun/m58/pallas_kernels/sparse_delta/scan_pallas.py
du -sh devrun .whl || true
