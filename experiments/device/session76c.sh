# Call 76c: make the trees first, here: `source experiments/device/copies.sh; archive
# topk_main main; archive topk_evl ev-logs; archive topk_evf ev-first; archive topk_evn
# ev-nostart` (patches in experiments/device/branches/); carry .whl and devrun; kind
# nvidia-h200 (an H100 may come).
# Call 76b: ev-logs fastest at issue 12's shape (0.302 against main's 0.311-0.315), and
# ahead of main at the other four shapes; the end's `evict_first` alone (ev-end) 0.307, the
# start's `evict_last` alone (ev-start) level with main. Now: ev-first (ev-logs + the
# frontier's one-time pick-log loads, planes 0 and 2, and the tails' partner scores
# `evict_first`), ev-nostart (ev-logs without the start tiles' `evict_last`); `bench_ops`
# for the ratio on ev-logs and ev-first.
source experiments/device/common.sh
topk_target main evl evf evn evn evf evl main
topk_other_shapes main evl evf evn
topk_bench evl
topk_bench evf
topk_collect
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
