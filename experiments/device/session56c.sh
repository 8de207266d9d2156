# Session 56's third call, issue 12 (session 49b's top-k part, never run: loans were paused
# in sessions 48-49 and 56). DEADLINE=330, carry .whl (devrun not needed). The one shape where
# the kernel loses to the XLA path (8 rows, S = 1,024, k = 64: 0.0550 ms at best against
# 0.0497, session 42e) with the tilings not yet tried there: the groups halves with the
# threshold final selection (no lazy tails, so both halves rank all k entries in two
# interleaved chains, then 32 counting passes over the candidates instead of k frontier
# rounds), one row per program on 1, 2 and 4 warps, and the frontier on 2 warps. Twice, in
# opposite orders (a tiling measured later in a process ran up to 4% slower, session 38),
# then the threshold tiling's compiled cases.
source experiments/device/common.sh
TOPK="python -m experiments.bench_ops --op=topk --repeats=50 --topk_rows=8 --dtype=float32 --topk_sub_keys=1024 --topk_k=64"
A="block_rows=1;num_warps=4"
T4="block_rows=1;num_warps=4;final_select=threshold"
T2="block_rows=1;num_warps=2;final_select=threshold"
T1="block_rows=1;num_warps=1;final_select=threshold"
F2="block_rows=1;num_warps=2"
step t_a 120 . $TOPK "--tilings=default,$A,$T4,$T2,$T1,$F2"
step t_b 120 . $TOPK "--tilings=$F2,$T1,$T2,$T4,$A,default"
step t_tests 70 . env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q -n 3 -m gpu \
  tests/pallas_kernels/product_key/test_topk.py \
  -k "compiled_kernel_configs and num_warps-4_final_select-threshold"
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
