# Call 62b: carry .whl and devrun (from session62_copies.sh), after 62a; about 560 s. 62a
# found main's kernel 10 us behind the XLA path at 256 rows, S = 512, k = 64 (inside scans;
# `default_config` takes the groups there from FEW_ROWS_MAX = 128 rows on). Here: the
# default against the few-rows tiling (tt1: both threshold selections, one row a program)
# at 256, 512 and 1,024 rows, S = 512 and 1,024, k = 32 and 64, then again at S = 512 in
# the opposite tiling order (a tiling timed later in a process can run up to 4% slower, session
# 38); then branch `untaken-by-subtraction` (u62) against main (m62) at two more shapes it
# touches, 65,536 rows, k = 64 (2 rows a program), S = 512 and 1,024, one process each.
source experiments/device/common.sh
topk="python -m experiments.bench_ops --op=topk --repeats=30 --dtype=float32"
tt1="half_select=threshold;final_select=threshold;block_rows=1"
step t_rows_a 230 devrun/m62 $topk --topk_rows=256,512,1024 --topk_sub_keys=512,1024 --topk_k=32,64 "--tilings=default,$tt1"
step t_rows_b 120 devrun/m62 $topk --topk_rows=256,512,1024 --topk_sub_keys=512 --topk_k=32,64 "--tilings=$tt1,default"
for round in a b; do
  for tree in m62 u62; do
    step "t_${tree}_$round" 55 "devrun/$tree" $topk --topk_rows=65536 --topk_sub_keys=512,1024 --topk_k=64
  done
done
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
