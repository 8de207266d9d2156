# Call 69b: kind nvidia-h200 (issue 12's target is for an H200; say which card came); carry
# .whl only. Main (the repository root) alone: issue 12's shape (65,536 rows, S = 512, k = 32)
# on float32 and bf16-grid rows, default and `exact_order=false`, two processes; `bench_ops
# --op=topk` there (the kernel, `lax.top_k` over the 1,024 scores, the XLA path); then the
# other benchmarked shapes.
source experiments/device/common.sh
topk_target root root
topk_bench root
topk_other_shapes root
topk_collect
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
