# Call 69a: carry .whl and devrun (session69_copies.sh); kind nvidia-h200 (issue 12's target
# is for an H200; say which card came). Issue 12's shape (65,536 rows, S = 512, k = 32) on
# float32 and bf16-grid rows, default and `exact_order=false`: main (the repository root),
# branch frontier-logits (devrun/topk_logits) and the frontier that stored its candidates
# (devrun/topk_main), one process per tree and round, two rounds in opposite orders;
# `bench_ops --op=topk` for main and the branch; the other benchmarked shapes for both;
# then the branch's compiled top-k tests with the time left.
source experiments/device/common.sh
topk_target root logits main main logits root
topk_bench root
topk_bench logits
topk_other_shapes root logits
topk_collect
topk_tests logits 300
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
