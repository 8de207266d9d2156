# Issue 12's decode shapes (8 rows) with one row and one warp a program, the tilings that
# could make a few-rows rule for `default_config`: session 57 had the one-warp threshold
# final selection (t1) tie the XLA path at S = 1,024, k = 64 but lose at S = 512, k = 64
# (0.053 against 0.034 ms, one process). Beside it: both selections by threshold (tt1, the
# default where S <= 4k, which tied XLA at S = 256, k = 64) and the frontier on one row
# (f1). S in {512, 1,024}, k in {32, 64}, twice in opposite orders (one process each; a
# tiling measured later in a process ran up to 4% slower, session 38). Run after
# session58a.sh in the same call (carry .whl and devrun; it needs only the checkout).
source experiments/device/common.sh
topk="python -m experiments.bench_ops --op=topk --repeats=50 --topk_rows=8 --dtype=float32 --topk_sub_keys=512,1024 --topk_k=32,64"
t1="block_rows=1;num_warps=1;final_select=threshold"
tt1="block_rows=1;num_warps=1;half_select=threshold;final_select=threshold"
f1="block_rows=1;num_warps=1"
step t_a 80 . $topk "--tilings=default,$t1,$tt1,$f1"
step t_b 80 . $topk "--tilings=$f1,$tt1,$t1,default"
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
