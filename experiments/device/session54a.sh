# Session 54's first call (devrun from session53_more_copies.sh). DEADLINE=560, carry .whl
# and devrun. dfr54's compiled tests first (the pair weights, forward and both lane
# backwards; the scan's float32-table cases at 1e-5 against the XLA twin, which run the
# dense kernel's per-slab QK and solve gradients at C = 64 = block_cols), then
# `sdm_small`'s step, one process each, two rounds: m54 (main), dfr54 (d54, df54 and QK's
# backward on lanes), df54 (d54 and the slot-order pair-weight forward), d54 (the per-slab
# pair gradients alone), `gdn_small` each round for the ratio. The deadline cuts from the
# end.
source experiments/device/common.sh
step tests_dfr54 120 devrun/dfr54 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q \
  -m gpu tests/pallas_kernels/sparse_delta/test_pair_weights.py \
  tests/pallas_kernels/sparse_delta/test_scan_pallas.py -k "pair or float32"
GDN_TREE=m54 step_rounds "a b" m54 dfr54 df54 d54
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
