# Call 75c: make the trees first, here: `source experiments/device/copies.sh; archive
# topk_main a6b5cf7; archive topk_ff fused-flags; archive topk_sp speculative-head`
# (patches experiments/device/branches/{fused-flags,speculative-head}.patch on a6b5cf7);
# carry .whl and devrun; kind nvidia-h200 (an H100 may come: say which). Two frontier
# changes against main: `fused-flags` decides the tails' branch by a flag summed with the tie
# count over the rows (one cross-row reduction a round, not two) and loads the lane's next
# head before that branch; `speculative-head` (on it) also loads the next head from the
# (key, slot) pick before the ties are broken. Issue 12's shape, float32 and bf16-grid rows,
# default and exact_order=false, one process per tree, two rounds in opposite orders; then
# the other shapes; then the compiled tests on speculative-head.
source experiments/device/common.sh
topk_target main ff sp sp ff main
topk_other_shapes main ff sp
topk_tests sp 150
topk_collect
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
