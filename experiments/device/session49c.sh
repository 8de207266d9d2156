# Session 49's third call: the phase-2 kernels (issue 11) and the product-key top-k kernel
# at 65,536 rows, S = 512, k = 32 (issue 12), launch by launch, outside JAX. Nsight Compute
# died at attach to JAX (sessions 13-14), so `experiments.kernel_operands` records one
# chunk's launches (operands, and the cubins this GPU's XLA builds: "recorded") at
# `sdm_small`'s layer shapes in TREE (default m49: main), and `experiments/replay_kernel.py`
# replays each launch in a process without JAX (CuPy):
# 1. timed, every build of the kernel on the same buffers in turn: the recorded one and
#    devrun/cubins/variants.txt's (`session49_cubins.sh`, built here by XLA 0.10.2 from
#    the backlog's trees: union m49 / a48 / r48, scatter m49 / a48, gathers on 4 / 2 / 1
#    warps, dense m49 / d48, top-k default / exact_order=false). A faithful replay is near
#    the step profile's per-launch time (union about 37 us, forward gather 13.5, scatter
#    11.7, backward gather 9.8, the top-k 0.36 ms back to back);
# 2. the recorded build under ncu (--set full, clocks left alone).
# DEADLINE=590, carry .whl and devrun (session49_copies.sh, then session49_cubins.sh), run
# from main's checkout.
source experiments/device/common.sh
TREE=${TREE:-m49}
PHASE2="bwd_union_kernel fwd_gather_kernel fwd_scatter_kernel bwd_gather_kernel fwd_dense_kernel bwd_dense_kernel"
step ops 240 "devrun/$TREE" python -m experiments.kernel_operands --out_dir=/tmp/ops \
  --batch=16 --seq_len=2048 --kernels="$(echo $PHASE2 | tr ' ' ',')"
step ops_topk 120 "devrun/$TREE" python -m experiments.kernel_operands --op=topk \
  --out_dir=/tmp/ops --topk_rows=65536 --topk_sub_keys=512 --topk_k=32
cat "$OUT/ops_topk.log" >> "$OUT/ops.log"; rm -f "$OUT/ops_topk.log"
variants() {  # --variant flags of kernel $1 from variants.txt, with absolute cubin paths
  grep "^$1 " devrun/cubins/variants.txt | cut -d' ' -f2 | sed "s|=|=$ROOT/devrun/cubins/|; s|^|--variant=|"
}
for kernel in bwd_union_kernel product_key_topk_kernel $(echo $PHASE2 | cut -d' ' -f2-); do
  step "r_$kernel" 60 "devrun/$TREE" python3 experiments/replay_kernel.py "/tmp/ops/$kernel" \
    $(variants "$kernel")
done
cat "$OUT"/r_*.log > "$OUT/replay.log"; rm -f "$OUT"/r_*.log
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -n 1)
echo "ncu: ${NCU:-none}" >> "$OUT/calls.log"
for kernel in bwd_union_kernel product_key_topk_kernel fwd_gather_kernel fwd_scatter_kernel bwd_gather_kernel; do
  step "n_$kernel" 90 "devrun/$TREE" "$NCU" --clock-control none --set full \
    -k "regex:$kernel" --launch-skip 2 --launch-count 1 \
    python3 experiments/replay_kernel.py "/tmp/ops/$kernel" --warmup=2 --repeats=1
done
cat "$OUT"/n_*.log > "$OUT/ncu.log"; rm -f "$OUT"/n_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
