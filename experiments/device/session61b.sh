# Call 61b: carry .whl and devrun (from session60_copies.sh; m60 = main); about 130 s. Call
# 61a found the kernel ahead of the XLA path in the SDM decode step's scans at S = 512 and
# S = 128 (batches 1 and 8, two processes each); this is the same measurement at S = 1,024
# (--sdm_slots 1,048,576, 4 GiB of table a sequence), the shape where session 58 read the
# op alone 2-3 us behind at few rows, before `AUTO_KERNEL_MIN_ROWS` goes.
source experiments/device/common.sh
decode="python -m experiments.bench_decode --mixers=M --batches=1,8 --contexts=8192 --models="
for run in a b; do
  for impl in xla pallas; do
    step "d_${impl}_1048576_$run" 80 devrun/m60 $decode --sdm_topk_impl=$impl --sdm_slots=1048576
  done
done
cat "$OUT"/d_*.log > "$OUT/decode.log"; rm -f "$OUT"/d_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
