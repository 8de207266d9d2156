# Session 50's second call (its first ran session49a.sh): call 49c again with the replays
# given XLA's dynamic shared memory (49c's faulted on every kernel that takes some), then
# what call 49b would have run that matters most after 49a: main with all-cuts and
# gather-warps merged (m50) against main before (m49), with `gdn_small` in the same call,
# issue 12's decode tilings (one order), and m50's per-op step profile with its HLO; the
# deadline cuts from the end.
# DEADLINE=590, carry .whl and devrun (session49_copies.sh, then session49_cubins.sh), run
# from main's checkout. Read here: step_table.py on calls.log; replay.log (JSON per
# kernel); ncu.log; topk.log; `experiments.hlo_launches --profile=profile.log`.
source experiments/device/common.sh
replay_kernels m49 45 60 bwd_union_kernel product_key_topk_kernel fwd_gather_kernel \
  bwd_gather_kernel fwd_dense_kernel
step_rounds b m50 m49
step s_gdn 75 devrun/m49 python -m experiments.bench_ops --op=train_step --train_configs=gdn_small --repeats=10
collect_steps
# Issue 12: 8 rows, S = 1,024, k = 64, where the kernel lost to the XLA path (session 42e);
# session49b.sh says what each tiling is.
step topk 100 . python -m experiments.bench_ops --op=topk --repeats=50 --topk_rows=8 \
  --dtype=float32 --topk_sub_keys=1024 --topk_k=64 \
  "--tilings=default,block_rows=1;num_warps=4,block_rows=1;num_warps=4;final_select=threshold,block_rows=1;num_warps=2;final_select=threshold,block_rows=1;num_warps=1;final_select=threshold,block_rows=1;num_warps=2"
step profile 150 devrun/m50 python -m experiments.bench_ops --op=train_step \
  --train_configs=sdm_small --repeats=5 --top_ops=2000 --hlo_dir=/tmp/hlo
[ -d /tmp/hlo ] && ( cd /tmp && tar czf "$OUT/hlo.tgz" hlo ) 2>> "$OUT/calls.log"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
