# Call 69a: carry .whl and devrun (session69_copies.sh); kind nvidia-h200 (issue 12's target
# is for an H200; say which card came). Issue 12's shape (65,536 rows, S = 512, k = 32) on
# float32 and bf16-grid rows, default and `exact_order=false`: main (the repository root),
# branch frontier-logits (devrun/topk_logits) and the frontier that stored its candidates
# (devrun/topk_main), one process per tree and round, two rounds in opposite orders;
# `bench_ops --op=topk` for main and the branch; the other benchmarked shapes for both;
# then the branch's compiled top-k tests with the time left.
source experiments/device/common.sh
n=0
for tree in root logits main main logits root; do
  topk_flagged "${tree}_512_32_$((++n))" "$tree" 512 32 normal,bf16_grid default,exact_order=false
done
for tree in root logits; do
  dir=devrun/topk_$tree; [ "$tree" = root ] && dir=.
  step "b_$tree" 60 "$dir" python -m experiments.bench_ops --op=topk --repeats=30 \
    --dtype=float32 --topk_rows=65536 --topk_sub_keys=512 --topk_k=32
  topk_figures "b_$tree"
done
for shape in "256 32" "1024 32" "512 64" "1024 64"; do
  set -- $shape
  for tree in root logits; do topk_flagged "${tree}_$1_$2" "$tree" "$1" "$2" normal default; done
done
cat "$OUT"/f_*.log "$OUT"/b_*.log > "$OUT/topk.log"
rm -f "$OUT"/f_*.log "$OUT"/b_*.log
step t_tests 300 devrun/topk_logits env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest \
  -q -n 8 -m gpu tests/pallas_kernels/product_key/test_topk.py
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
