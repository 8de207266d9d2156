# Call 68a: carry .whl and devrun (session68_copies.sh); kind nvidia-h200, for whatever card
# comes. The frontier that forms its heads in registers from the pick logs (this tree)
# against main's, which forms and stores every candidate first (devrun/topk_main): issue
# 12's target shape (65,536 rows, S = 512, k = 32) on float32 and bf16-grid rows, default
# and `exact_order=false`, one process per tree and round, two rounds in opposite orders;
# this tree's compiled tests; then the other benchmarked shapes, one process each.
source experiments/device/common.sh
# Trees: main (devrun/topk_main) and root (this tree, logged as "lazy" in calls 68a-68c).
topk_target main root root main
step t_tests 120 . env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q -n 4 -m gpu \
  tests/pallas_kernels/product_key/test_topk.py
topk_bench root
topk_other_shapes main root
topk_collect
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
