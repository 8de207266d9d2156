# Call 62c: carry .whl and devrun (from session62_copies.sh); about 450 s. Call 62b's two row
# sweeps ran past their limits before printing (the benchmark prints once, at the end), so
# here one process per (S, k), each with its own log: main's default against the few-rows
# tiling (tt1: both threshold selections, one row a program) at 256, 512 and 1,024 rows,
# S = 512 and 1,024, k = 32 and 64; then S = 512 again in the opposite tiling order (a
# tiling timed later in a process can run up to 4% slower, session 38).
source experiments/device/common.sh
topk="python -m experiments.bench_ops --op=topk --repeats=30 --dtype=float32 --topk_rows=256,512,1024"
tt1="half_select=threshold;final_select=threshold;block_rows=1"
for s in 512 1024; do
  for k in 32 64; do
    step "t_${s}_${k}_a" 90 devrun/m62 $topk --topk_sub_keys=$s --topk_k=$k "--tilings=default,$tt1"
  done
done
for k in 32 64; do
  step "t_512_${k}_b" 90 devrun/m62 $topk --topk_sub_keys=512 --topk_k=$k "--tilings=$tt1,default"
done
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
