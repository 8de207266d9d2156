# Call 61d: carry .whl and devrun (m61 as for call 61c); about 120 s. Issue 12's six
# benchmark shapes at 65,536 rows (S = 256, 512, 1,024; k = 32, 64), main's default kernel
# against the XLA path and `lax.top_k`, one process: with call 61c's decode rows, the whole
# "never slower than the XLA path" table on one card in one session.
source experiments/device/common.sh
step t_train 200 devrun/m61 python -m experiments.bench_ops --op=topk --repeats=50 \
  --dtype=float32 --topk_rows=65536 --topk_sub_keys=256,512,1024 --topk_k=32,64
mv "$OUT/t_train.log" "$OUT/topk.log"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
