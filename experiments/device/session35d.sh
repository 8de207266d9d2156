# Session 35, call d (issue 12): `pick=argmax` against the default (`max_min`) at every shape
# where the groups tournament is the default, twice, in two processes (call b's sweep had it
# 0.403 against 0.411 ms back to back at S = 512, k = 32).
source experiments/device/common.sh
TOPK="python -m experiments.bench_ops --op=topk --dtype=float32 --repeats=30 --topk_rows=65536 --tilings=default,pick=argmax"
step pick_1 90 . $TOPK --topk_sub_keys=256,512,1024 --topk_k=32
step pick_2 90 . $TOPK --topk_sub_keys=512,1024 --topk_k=64
step pick_3 90 . $TOPK --topk_sub_keys=256,512,1024 --topk_k=32
cat "$OUT"/pick_*.log > "$OUT/pick.log"; rm -f "$OUT"/pick_[0-9].log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
