# Session 54's second call (same devrun). DEADLINE=560, carry .whl and devrun. d54's and
# c54's compiled float32-table scan tests (1e-5 against the XLA twin: the per-slab pair
# gradients at C = 64 = block_cols, and the pair-gradient kernel), then `sdm_small`'s step,
# one process each, two rounds: m54 (main), d54 (the dense kernel sums the QK and solve
# gradients per slab: XLA's build 149 registers and 1,888 instructions against 55 and
# 440), c54 (a Pallas kernel for them after the scan: 128 registers, 4 per SM, 456
# instructions a K step). About 310 s. The deadline cuts from the end.
source experiments/device/common.sh
for tree in d54 c54; do
  step "tests_$tree" 100 "devrun/$tree" env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m \
    pytest -q -m gpu tests/pallas_kernels/sparse_delta/test_scan_pallas.py -k "float32"
done
step_rounds "a b" m54 d54 c54
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
