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
TREE=m49
PHASE2="bwd_union_kernel fwd_gather_kernel fwd_scatter_kernel bwd_gather_kernel fwd_dense_kernel bwd_dense_kernel"
step ops 120 "devrun/$TREE" python -m experiments.kernel_operands --out_dir=/tmp/ops \
  --batch=16 --seq_len=2048 --kernels="$(echo $PHASE2 | tr ' ' ',')"
step ops_topk 60 "devrun/$TREE" python -m experiments.kernel_operands --op=topk \
  --out_dir=/tmp/ops --topk_rows=65536 --topk_sub_keys=512 --topk_k=32
cat "$OUT/ops_topk.log" >> "$OUT/ops.log"; rm -f "$OUT/ops_topk.log"
ls /tmp/ops/binaries/*.launches.json 2>/dev/null | wc -l | sed 's/^/launch files beside the recorded cubins: /' >> "$OUT/calls.log"
variants() {  # --variant flags of kernel $1 from variants.txt, with absolute cubin paths
  grep "^$1 " devrun/cubins/variants.txt | cut -d' ' -f2 | sed "s|=|=$ROOT/devrun/cubins/|; s|^|--variant=|"
}
shared_fallback() {  # the most shared memory XLA 0.10.2 gives kernel $1 in any variant build
  python3 -c "import glob, json, sys; print(max(r['shared_bytes'] for p in glob.glob('devrun/cubins/*/' + sys.argv[1] + '.cubin.launches.json') for r in json.load(open(p))))" "$1"
}
# --shared_bytes serves only a cubin with no launches beside it (should this JAX's thunks
# not read as 0.10.2's do); replay.log's shared_bytes says what each build got.
for kernel in bwd_union_kernel product_key_topk_kernel $(echo $PHASE2 | cut -d' ' -f2-); do
  step "r_$kernel" 45 "devrun/$TREE" python3 experiments/replay_kernel.py "/tmp/ops/$kernel" \
    --shared_bytes="$(shared_fallback "$kernel")" $(variants "$kernel")
  cat "$OUT/r_$kernel.log" >> "$OUT/replay.log"; rm -f "$OUT/r_$kernel.log"  # if cut short: few files
done
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -n 1)
for kernel in bwd_union_kernel product_key_topk_kernel fwd_gather_kernel bwd_gather_kernel fwd_dense_kernel; do
  step "n_$kernel" 60 "devrun/$TREE" "$NCU" --clock-control none --set full \
    -k "regex:$kernel" --launch-skip 2 --launch-count 1 \
    python3 experiments/replay_kernel.py "/tmp/ops/$kernel" --warmup=2 --repeats=1 \
    --shared_bytes="$(shared_fallback "$kernel")"
  cat "$OUT/n_$kernel.log" >> "$OUT/ncu.log"; rm -f "$OUT/n_$kernel.log"
done
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
