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
grep -ho '"fwd_back_to_back_ms": [0-9.]*\|"lax_top_k_2s_back_to_back_ms": [0-9.]*\|"xla_fwd_back_to_back_ms": [0-9.]*' \
  "$OUT"/t_main.log | tr '\n' ' ' >> "$OUT/calls.log"; echo >> "$OUT/calls.log"
cut_step() {  # cut_step NAME DIR ROUND
  step "c_$1_$3" 40 "$2" python -m experiments.device.time_topk_flagged --rows=65536 \
    --sub_keys=512 --inputs=normal --k=32 --tilings=default
}
for tree in main clamp h1 f1 h1f1; do
  dir=devrun/topk_$tree; [ "$tree" = main ] && dir=.; cut_step "$tree" "$dir" a
done
for tree in h1f1 f1 h1 clamp main; do
  dir=devrun/topk_$tree; [ "$tree" = main ] && dir=.; cut_step "$tree" "$dir" b
done
cat "$OUT"/f_*.log "$OUT"/t_*.log "$OUT"/c_*.log > "$OUT/topk.log"
rm -f "$OUT"/t_*.log "$OUT"/f_*.log "$OUT"/c_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
