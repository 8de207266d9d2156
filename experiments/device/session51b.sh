# Session 51's second call: session 50a's replays and ncu, of main's build (m50), with the
# backward gather in parts (b51p2, b51p4) among the variants, then issue 12's decode
# tilings. DEADLINE=585, carry .whl and devrun (session49_copies.sh, the b51p2 and b51p4
# copies (session51_copies.sh's way, 2 and 4 parts), then TREES="m49 m50 a48 r48 d48 g48w2
# g48w1 b51p2 b51p4" session49_cubins.sh; only m50's tree and devrun/cubins need carrying),
# run from main's checkout. Read here: replay.log (JSON per kernel), ncu.log, topk.log.
source experiments/device/common.sh
replay_kernels m50 45 60 bwd_union_kernel bwd_gather_kernel fwd_gather_kernel \
  product_key_topk_kernel fwd_dense_kernel
# Issue 12: 8 rows, S = 1,024, k = 64, where the kernel lost to the XLA path (session 42e);
# session49b.sh says what each tiling is.
step topk 100 . python -m experiments.bench_ops --op=topk --repeats=50 --topk_rows=8 \
  --dtype=float32 --topk_sub_keys=1024 --topk_k=64 \
  "--tilings=default,block_rows=1;num_warps=4,block_rows=1;num_warps=4;final_select=threshold,block_rows=1;num_warps=2;final_select=threshold,block_rows=1;num_warps=1;final_select=threshold,block_rows=1;num_warps=2"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
