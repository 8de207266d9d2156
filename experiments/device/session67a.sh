# Call 67a: carry .whl and devrun (session67_copies.sh); kind nvidia-h200, for whatever card
# comes; 114 s on an H100 (session 67). Issue 12's target shape (65,536 rows, S = 512, k =
# 32): main's default and `exact_order=false` on both kinds of rows, `lax.top_k` over the
# 1,024 scores and the XLA path (66b's steps); then where main's time goes: the stage cuts of
# ablate_topk.py (clamp, h1, f1, h1f1) and main, one process each, twice in opposite orders.
# (As run, its steps were written out; since session 68 they are common.sh's helpers.)
source experiments/device/common.sh
topk_flagged main root 512 32 normal,bf16_grid default,exact_order=false
topk_bench root
cut_step() {  # cut_step TREE ROUND: main from the repository root, a cut from devrun/topk_TREE
  local tree=$1; [ "$tree" = main ] && tree=root
  topk_flagged "c_$1_$2" "$tree" 512 32 normal default
}
for tree in main clamp h1 f1 h1f1; do cut_step "$tree" a; done
for tree in h1f1 f1 h1 clamp main; do cut_step "$tree" b; done
topk_collect
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
