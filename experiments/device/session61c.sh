# Call 61c: carry .whl and devrun (`source experiments/device/copies.sh; archive m61 <this
# commit's parent>`, the scanned timing of `topk_benchmarks`); about 150 s. Issue 12's
# decode shape, 8 rows, with the op timed inside a jitted scan of 64 calls (`*_fwd_scan_ms`)
# beside the back-to-back calls: S = 128, 256, 512, 1,024, k = 32 and 64, two processes.
source experiments/device/common.sh
for run in a b; do
  step "t_decode_$run" 120 devrun/m61 python -m experiments.bench_ops --op=topk --repeats=50 \
    --dtype=float32 --topk_rows=8 --topk_sub_keys=128,256,512,1024 --topk_k=32,64
done
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
