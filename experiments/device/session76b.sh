# Call 76b: make the trees first, here: `source experiments/device/copies.sh; archive
# topk_main main; archive topk_ev evict-hints; archive topk_evs ev-start; archive topk_eve
# ev-end; archive topk_evl ev-logs; archive topk_eva ev-all` (patches in
# experiments/device/branches/); carry .whl and devrun; kind nvidia-h200 (an H100 may come).
# Call 76a: evict-hints (the halves' start tiles loaded `evict_last`, the logits' loads at the
# end `evict_first`) 0.304-0.306 ms against main's 0.316-0.318 at issue 12's shape (an
# H100), and ahead at three of the other four shapes (S = 256: 0.244 against 0.240). Which
# part: ev-start (the start's hint alone), ev-end (the end's alone); and two more hints on
# top: ev-logs (the frontier's pick-log loads `evict_last`), ev-all (ev-logs and the groups'
# reloads `evict_last`).
source experiments/device/common.sh
topk_target main ev evs eve evl eva eva evl eve evs ev main
topk_other_shapes main ev evl eva
topk_collect
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
