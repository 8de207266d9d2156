# Call 62a: carry .whl and devrun (from session62_copies.sh); kind nvidia-h200, about 330 s.
# Every figure issues 11 and 12 name for the H200, in one call, as session 61 measured them
# on H100s: one round of `sdm_small`'s step against `gdn_small`'s (issue 11's 2x; 1.975-
# 1.986x on H100s, sessions 60-61), issue 12's six shapes at 65,536 rows (the 0.33 ms target
# at S = 512, k = 32; never slower than the XLA path), and its decode shape, 8 rows, with the
# forwards timed inside scans. On an H100 the step round is skipped (seven rounds exist).
source experiments/device/common.sh
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  GDN_TREE=m62 step_rounds "a" m62
fi
topk="python -m experiments.bench_ops --op=topk --repeats=50 --dtype=float32"
step t_train 120 devrun/m62 $topk --topk_rows=65536 --topk_sub_keys=256,512,1024 --topk_k=32,64
step t_decode 120 devrun/m62 $topk --topk_rows=8 --topk_sub_keys=128,256,512,1024 --topk_k=32,64
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
