# Call 68a: carry .whl and devrun (session68_copies.sh); kind nvidia-h200, for whatever card
# comes. The frontier that forms its heads in registers from the pick logs (this tree)
# against main's, which forms and stores every candidate first (devrun/topk_main): issue
# 12's target shape (65,536 rows, S = 512, k = 32) on float32 and bf16-grid rows, default
# and `exact_order=false`, one process per tree and round, two rounds in opposite orders;
# this tree's compiled tests; then the other benchmarked shapes, one process each.
source experiments/device/common.sh
# Trees: main (devrun/topk_main) and root (this tree, logged as "lazy" in calls 68a-68c).
n=0
for tree in main root root main; do
  topk_flagged "${tree}_512_32_$((++n))" "$tree" 512 32 normal,bf16_grid default,exact_order=false
done
step t_tests 120 . env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q -n 4 -m gpu \
  tests/pallas_kernels/product_key/test_topk.py
step b_root 60 . python -m experiments.bench_ops --op=topk --repeats=30 \
  --dtype=float32 --topk_rows=65536 --topk_sub_keys=512 --topk_k=32
topk_figures b_root
for shape in "256 32" "1024 32" "512 64" "1024 64"; do
  set -- $shape
  for tree in main root; do topk_flagged "${tree}_$1_$2" "$tree" "$1" "$2" normal default; done
done
cat "$OUT"/f_*.log "$OUT"/b_*.log > "$OUT/topk.log"
rm -f "$OUT"/f_*.log "$OUT"/b_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
