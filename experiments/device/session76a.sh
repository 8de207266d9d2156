# Call 76a: make the trees first, here: `source experiments/device/copies.sh; archive
# topk_main main; archive topk_sh split-head; archive topk_pf prefetch-half; archive topk_ev
# evict-hints` (each branch one commit on 7f5dc64; patches in experiments/device/branches/);
# carry .whl and devrun; kind nvidia-h200 (an H100 may come: say which).
# Three trials beside main at issue 12's shape (two rounds, opposite orders), then every tree
# at the other four shapes:
# - sh: a half's new head from the best of the other groups, reduced while the winner's
#   group reloads, and that group's next (the chain after the reload: 3 shuffle levels, not
#   9; XLA's 0.10.2 build: the halves' loop 215 instructions against 186, 96 registers);
# - pf: one score of each 32-byte sector of the second half loaded with the first half's
#   tile (consumed by a NaN check), so the second half's tile, loaded after the first
#   half's start, finds its sectors near (93 registers, as main);
# - ev: the start tiles loaded `evict_last`, the logits' loads at the end `evict_first`.
source experiments/device/common.sh
topk_target main sh pf ev ev pf sh main
topk_other_shapes main sh pf ev
topk_collect
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
