# Call 75a: carry .whl; kind nvidia-h200 (issue 12's target card; an H100 may come: say
# which). Main at issue 12's shape (65,536 rows, S = 512, k = 32) as every call since
# session 70 times it (30 calls back to back), then over 300 calls, where the start and the
# final wait (about 0.37 ms a timed stream on an H100, call 74d) weigh 0.4% of the kernel's
# time instead of 4%: `time_topk_flagged` on float32 and bf16-grid rows, `bench_ops --op=topk`
# (the kernel, `lax.top_k` over the 1,024 scores and the XLA path, all over the same number
# of calls), and `profile_topk` (the kernel's own time in JAX's profile).
source experiments/device/common.sh
topk_steady_state main root
topk_collect
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
