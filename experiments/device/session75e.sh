# Call 75e: make the trees first, here: `source experiments/device/copies.sh; archive
# topk_main a6b5cf7; archive topk_ff fused-flags; archive topk_ffo
# fused-flags-only` (fused-flags.patch on a6b5cf7; fused-flags-only is main's d6e5973);
# carry .whl and devrun; kind nvidia-h200 (an H100 may come: say which).
# Call 75d: `fused-flags` 3% ahead of main at issue 12's shape (0.308-0.310 against
# 0.315-0.324 on float32 rows, three rounds), level at S = 512, k = 64, 6% behind at S =
# 1,024, k = 64, as was `load-first` (the lane's next head loaded before the tails' branch,
# alone), which was level at issue 12's shape. `fused-flags-only` is `fused-flags` without
# that load move. Three rounds per tree at issue 12's shape, the other shapes once each,
# `bench_ops` on fused-flags-only (the ratio to `lax.top_k` in one process), then its
# compiled tests.
source experiments/device/common.sh
topk_target main ffo ff ff main ffo ffo ff main
topk_other_shapes main ffo ff
topk_bench ffo
topk_tests ffo 230
topk_collect
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
