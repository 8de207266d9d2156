# Call 67a: carry .whl and devrun (session67_copies.sh); kind nvidia-h200, for whatever card
# comes; 114 s on an H100 (session 67). Issue 12's target shape (65,536 rows, S = 512, k =
# 32): main's default and `exact_order=false` on both kinds of rows, `lax.top_k` over the
# 1,024 scores and the XLA path (66b's steps); then where main's time goes: the stage cuts of
# ablate_topk.py (clamp, h1, f1, h1f1) and main, one process each, twice in opposite orders.
source experiments/device/common.sh
step f_main 40 . python -m experiments.device.time_topk_flagged --rows=65536 \
  --sub_keys=512 --inputs=normal,bf16_grid --k=32 --tilings=default,exact_order=false
step t_main 60 . python -m experiments.bench_ops --op=topk --repeats=30 \
  --dtype=float32 --topk_rows=65536 --topk_sub_keys=512 --topk_k=32
topk_figures t_main
cut_step() {  # cut_step TREE ROUND: main from the repository root, a cut from devrun/topk_TREE
  local dir=devrun/topk_$1; [ "$1" = main ] && dir=.
  step "c_$1_$2" 40 "$dir" python -m experiments.device.time_topk_flagged --rows=65536 \
    --sub_keys=512 --inputs=normal --k=32 --tilings=default
}
for tree in main clamp h1 f1 h1f1; do cut_step "$tree" a; done
for tree in h1f1 f1 h1 clamp main; do cut_step "$tree" b; done
cat "$OUT"/f_*.log "$OUT"/t_*.log "$OUT"/c_*.log > "$OUT/topk.log"
rm -f "$OUT"/t_*.log "$OUT"/f_*.log "$OUT"/c_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
