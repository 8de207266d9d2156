# Session 53's last call (devrun from session53_more_copies.sh). DEADLINE=370, carry .whl
# and devrun: the session's device time was nearly spent, so one round each. df54's
# compiled tests first (the pair weights, forward and backward; the scan's float32-table
# cases at 1e-5 against the XLA twin, which run the dense kernel's per-slab QK and solve
# gradients at C = 64 = block_cols), then `sdm_small`'s step, one process each: m54
# (main), df54 (d54 and the slot-order pair-weight forward), `gdn_small` for the ratio,
# d54 (the per-slab pair gradients alone) last. The deadline cuts from the end.
source experiments/device/common.sh
step tests_df54 100 devrun/df54 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q \
  -m gpu tests/pallas_kernels/sparse_delta/test_pair_weights.py \
  tests/pallas_kernels/sparse_delta/test_scan_pallas.py -k "pair or float32"
GDN_TREE=m54 step_rounds "a" m54 df54
step_rounds "a" d54
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
