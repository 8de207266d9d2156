# Session 56's second call (the machine 56a left warm, same devrun and carry). DEADLINE=560.
# all56's compiled tests (batch-copies, key-grads-in-kernel and scan_unroll 16 together),
# then `sdm_small`'s step, one process each, two rounds: m56 (main), u56 (scan_unroll 16
# alone), all56, `gdn_small` each round for the ratio; then all56's per-op profile with its
# HLO. About 500 s on a host like 55a's. The deadline cuts from the end.
source experiments/device/common.sh
step tests_all56 100 devrun/all56 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q \
  -m gpu tests/pallas_kernels/sparse_delta/test_batch_copies.py \
  tests/pallas_kernels/sparse_delta/test_pair_weights.py \
  tests/pallas_kernels/sparse_delta/test_scan_pallas.py -k "copies or pair or (float32 and compiled)"
GDN_TREE=m56 step_rounds "a b" m56 u56 all56
step_profile all56 100
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
