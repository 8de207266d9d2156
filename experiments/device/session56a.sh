# Session 56's first call (devrun from session56_copies.sh). DEADLINE=560, carry .whl and
# devrun; ask for an H200 (kind nvidia-h200: the target card, whose ratio was last
# measured in session 50). b56's compiled tests (the copies kernel bit for bit against
# jnp.broadcast_to; the float32-table scan against the XLA twin; u56 changes no kernel and
# the compiled tests already run unrolls 1, 3 and 4), then
# `sdm_small`'s step, one process each, two rounds: m56 (main), b56 (batch-copies), u56
# (scan_unroll 16), `gdn_small` each round for the ratio; then main's per-op profile if time
# is left. About 450 s on a host like 55a's. The deadline cuts from the end.
source experiments/device/common.sh
step tests_b56 100 devrun/b56 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q \
  -m gpu tests/pallas_kernels/sparse_delta/test_batch_copies.py \
  tests/pallas_kernels/sparse_delta/test_scan_pallas.py -k "copies or (float32 and compiled)"
GDN_TREE=m56 step_rounds "a b" m56 b56 u56
step_profile m56 100
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
