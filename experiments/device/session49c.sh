# Session 49's third call (needs a session with device time left after 49a and 49b, or a
# session of its own): the first hardware counters of phase 2's kernels (issue 11) and of
# the product-key top-k kernel at 65,536 rows, S = 512, k = 32 (issue 12). Nsight Compute
# died at attach to JAX (sessions 13-14), so one chunk's launches are recorded
# (`experiments.kernel_operands`: operands and XLA's cubins at `sdm_small`'s layer shapes)
# and replayed in processes without JAX (`experiments/replay_kernel.py`, CuPy), first timed
# (against the step profile's per-launch times: union about 37 us, forward gather 13.5,
# scatter 11.7, backward gather 9.8; the top-k 0.36 ms back to back), then under ncu
# (--set full, clocks left alone).
# DEADLINE=590, carry .whl and devrun (TREE names the copy, default m49: main), run from
# main's checkout.
source experiments/device/common.sh
TREE=${TREE:-m49}
KERNELS="bwd_union_kernel product_key_topk_kernel fwd_gather_kernel fwd_scatter_kernel bwd_gather_kernel"
step ops 240 "devrun/$TREE" python -m experiments.kernel_operands --out_dir=/tmp/ops \
  --batch=16 --seq_len=2048
step ops_topk 120 "devrun/$TREE" python -m experiments.kernel_operands --op=topk \
  --out_dir=/tmp/ops --topk_rows=65536 --topk_sub_keys=512 --topk_k=32
cat "$OUT/ops_topk.log" >> "$OUT/ops.log"; rm -f "$OUT/ops_topk.log"
for kernel in $KERNELS; do
  step "r_$kernel" 60 "devrun/$TREE" python3 experiments/replay_kernel.py "/tmp/ops/$kernel"
done
cat "$OUT"/r_*.log > "$OUT/replay.log"; rm -f "$OUT"/r_*.log
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -n 1)
echo "ncu: ${NCU:-none}" >> "$OUT/calls.log"
for kernel in $KERNELS; do
  step "n_$kernel" 90 "devrun/$TREE" "$NCU" --clock-control none --set full \
    -k "regex:$kernel" --launch-skip 2 --launch-count 1 \
    python3 experiments/replay_kernel.py "/tmp/ops/$kernel" --warmup=2 --repeats=1
done
cat "$OUT"/n_*.log > "$OUT/ncu.log"; rm -f "$OUT"/n_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
