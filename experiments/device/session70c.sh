# Call 70c: carry .whl (main alone, the repository root); kind nvidia-h200, for issue 12's
# target card (an H100 may come: say which). Issue 12's shape (65,536 rows, S = 512, k = 32),
# float32 and bf16-grid rows, default and `exact_order=false`, two processes; then
# `bench_ops --op=topk` (the kernel beside `lax.top_k` and the XLA path).
source experiments/device/common.sh
topk_target root root
topk_bench root
topk_collect
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
