# Call 62d: carry .whl and devrun (from session62_copies.sh); about 330 s. Call 62c found the
# few-rows tiling (tt1: both threshold selections, one row a program) 1.7-2.3x faster than
# the default (groups and frontier) inside scans at 256-1,024 rows, S = 512 and 1,024, k =
# 32 and 64. Here, where the two cross: 2,048 to 16,384 rows, one process per (S, k), the
# forwards back to back (no scans above 1,024 rows).
source experiments/device/common.sh
topk="python -m experiments.bench_ops --op=topk --repeats=30 --dtype=float32 --topk_rows=2048,4096,8192,16384"
tt1="half_select=threshold;final_select=threshold;block_rows=1"
for s in 512 1024; do
  for k in 32 64; do
    step "t_${s}_${k}" 75 devrun/m62 $topk --topk_sub_keys=$s --topk_k=$k "--tilings=default,$tt1"
  done
done
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
