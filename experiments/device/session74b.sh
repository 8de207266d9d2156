# Call 74b: carry .whl; kind nvidia-h200 (an H100 may come: say which). Where main's top-k
# kernel waits, at issue 12's shape (65,536 rows, S = 512, k = 32): call 74a found the
# halves' rounds run inside the frontier's (three independent chains a loop body, not two
# and one) level with main, though the same code with the halves' round after the frontier's
# pick ran 12% slower, so neither issue nor latency alone explains the kernel's time.
# `experiments.kernel_operands` records the launch and this GPU's cubin; `replay_kernel.py`
# times it outside JAX (Nsight Compute could not attach to JAX, sessions 13-14), then runs it
# under ncu: the full set (ncu_full.log: pipes, occupancy, caches, the stall rules), and the
# stall reasons per issued instruction with the issue and pipe counters (ncu_stalls.log).
source experiments/device/common.sh
step ops_topk 120 . python -m experiments.kernel_operands --op=topk --out_dir=/tmp/ops \
  --topk_rows=65536 --topk_sub_keys=512 --topk_k=32
step r_topk 40 . python3 experiments/replay_kernel.py /tmp/ops/product_key_topk_kernel \
  --shared_bytes=512
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -n 1)
echo "ncu: ${ncu:-none}" >> "$OUT/calls.log"
replay="python3 experiments/replay_kernel.py /tmp/ops/product_key_topk_kernel --warmup=2 --repeats=1 --shared_bytes=512"
step ncu_stalls 90 . "$ncu" --clock-control none -k regex:product_key_topk --launch-skip 2 \
  --launch-count 1 --page raw --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__warps_eligible.avg.per_cycle_active,regex:sm__inst_executed_pipe_.*\.avg\.pct_of_peak_sustained_active,regex:sm__pipe_.*_cycles_active\.avg\.pct_of_peak_sustained_active,l1tex__t_sector_hit_rate.pct,lts__t_sector_hit_rate.pct,gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed" \
  $replay
step ncu_full 150 . "$ncu" --clock-control none --set full -k regex:product_key_topk \
  --launch-skip 2 --launch-count 1 $replay
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
