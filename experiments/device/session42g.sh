# Session 42, call g: call f's timings only (call f's machine was taken back before it
# finished, with most of the budget): the exact-by-construction frontier against
# `exact_order=false` and session 41's tree (devrun/h41, carried), alternating; bf16 last.
source experiments/device/common.sh
T32="python -m experiments.bench_ops --op=topk --repeats=30 --topk_rows=65536 --topk_sub_keys=512 --topk_k=32"
step t_new_a 40 . $T32 --dtype=float32 --tilings=default
step t_fast_a 30 . $T32 --dtype=float32 --tilings=exact_order=false
step t_h41_a 40 devrun/h41 $T32 --dtype=float32 --tilings=default
step t_new_b 30 . $T32 --dtype=float32 --tilings=default
step t_h41_b 30 devrun/h41 $T32 --dtype=float32 --tilings=default
step t_new_bf16 30 . $T32 --dtype=bfloat16 --tilings=default
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
