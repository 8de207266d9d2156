# Session 56's first call, run in session 57 (loans were paused all of session 56; devrun
# from session56_copies.sh). DEADLINE=560, carry .whl and devrun; ask for an H200 (kind
# nvidia-h200: the target card, whose ratio was last measured in session 50).
# b56's compiled tests (the copies kernel bit for bit against jnp.broadcast_to; the
# float32-table scan against the XLA twin), k56's (the pair-weight kernels against the XLA
# path at sdm_small's chunk shape), then `sdm_small`'s step, one process each, two rounds:
# m56 (main), b56 (batch-copies), k56 (key-grads-in-kernel). About 450 s on a host like
# 55a's. The deadline cuts from the end.
source experiments/device/common.sh
step tests_b56 100 devrun/b56 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q \
  -m gpu tests/pallas_kernels/sparse_delta/test_batch_copies.py \
  tests/pallas_kernels/sparse_delta/test_scan_pallas.py -k "copies or (float32 and compiled)"
step tests_k56 100 devrun/k56 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q \
  -m gpu tests/pallas_kernels/sparse_delta/test_pair_weights.py
step_rounds "a b" m56 b56 k56
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
