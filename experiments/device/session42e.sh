# Session 42, call e (issue 12): the 8-row decode shapes where the kernel lost to the XLA
# path or came within 2 us (call a: S = 1,024, k = 64: 0.0546-0.0600 against 0.0498), with
# tilings for latency rather than throughput: one row per program and 4 warps, for the
# groups, the whole-half scans and both threshold selections.
source experiments/device/common.sh
TOPK="python -m experiments.bench_ops --op=topk --repeats=50 --topk_rows=8 --dtype=float32"
TILINGS="--tilings=default,block_rows=1;num_warps=4,half_select=scan;block_rows=1;num_warps=4,half_select=threshold;final_select=threshold;block_rows=1;num_warps=4"
step t_1024_64 120 . $TOPK --topk_sub_keys=1024 --topk_k=64 "$TILINGS"
step t_512_64 100 . $TOPK --topk_sub_keys=512 --topk_k=64 "$TILINGS"
step t_1024_32 100 . $TOPK --topk_sub_keys=1024 --topk_k=32 "$TILINGS"
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
