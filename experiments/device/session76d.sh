# Call 76d: make the trees first, here: `source experiments/device/copies.sh; archive
# topk_base 7f5dc64; archive topk_main 2bab7ed; archive topk_evst store-hints`
# (store-hints.patch on 2bab7ed); carry .whl and devrun; kind nvidia-h200 (an H100 may come).
# Main now carries the L1 hints of call 76c's ev-logs (2bab7ed). Beside the main before it
# (base) and store-hints (the pick-log stores `evict_last`, the ids' and logits' stores
# `evict_first`) at issue 12's shape; then main's steady state (30 and 300 calls,
# `bench_ops`, `profile_topk`) and its compiled top-k tests.
source experiments/device/common.sh
topk_target base main evst evst main base
topk_steady_state main main
topk_tests main 240
topk_collect
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
