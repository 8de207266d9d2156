# Call 66b: carry .whl and devrun (session66_copies.sh); kind nvidia-h200, for whatever card
# comes; about 60 s. Issue 12's target shape at main alone (65,536 rows, S = 512, k = 32):
# the default and `exact_order=false` on both kinds of rows, then `lax.top_k` over the
# 1,024 scores and the XLA path beside it on the same card.
source experiments/device/common.sh
step f_m66_32 40 devrun/m66 python -m experiments.device.time_topk_flagged --rows=65536 \
  --sub_keys=512 --inputs=normal,bf16_grid --k=32 --tilings=default,exact_order=false
step t_m66_512 60 devrun/m66 python -m experiments.bench_ops --op=topk --repeats=30 \
  --dtype=float32 --topk_rows=65536 --topk_sub_keys=512 --topk_k=32
topk_figures t_m66_512
cat "$OUT"/t_*.log "$OUT"/f_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log "$OUT"/f_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
