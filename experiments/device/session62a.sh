# Call 62a: carry .whl and devrun (from session62_copies.sh); kind nvidia-h200, about 420 s
# (570 on an H200). On an H200 first: one round of `sdm_small`'s step against `gdn_small`'s
# (issue 11's 2x; 1.975-1.986x on H100s, sessions 60-61). On any card: the top-k at issue
# 12's target shape (65,536 rows, S = 512, k = 32), main (m62) against branch
# `untaken-by-subtraction` (u62), one process each, alternating, twice; then main's kernel
# against the XLA path at row counts never timed since "auto" took the kernel everywhere
# (256, 1,024 and 4,096 rows; the forwards inside scans up to 1,024). On an H200 last:
# issue 12's six shapes at 65,536 rows.
source experiments/device/common.sh
on_h200() { nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; }
on_h200 && GDN_TREE=m62 step_rounds "a" m62
topk="python -m experiments.bench_ops --op=topk --repeats=50 --dtype=float32"
for round in a b; do
  for tree in m62 u62; do
    step "t_${tree}_$round" 75 "devrun/$tree" $topk --topk_rows=65536 --topk_sub_keys=512 --topk_k=32
  done
done
step t_rows 150 devrun/m62 $topk --topk_rows=256,1024,4096 --topk_sub_keys=512 --topk_k=32,64
on_h200 && step t_train 120 devrun/m62 $topk --topk_rows=65536 --topk_sub_keys=256,512,1024 --topk_k=32,64
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
grep -ho '"fwd_back_to_back_ms": [0-9.]*' "$OUT/topk.log" >> "$OUT/calls.log"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
