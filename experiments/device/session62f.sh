# Call 62f: carry .whl and devrun (from session62_copies.sh; m62 = main after 62e); about
# 200 s. XLA's build (experiments.xla_build) gives `pick="max_min"` shorter half rounds than
# the default "argmax" at every benchmarked shape (S = 512, k = 32: 165 against 179
# instructions, 117 against 131 on the ALU pipe), where session 35's kernel timed argmax
# 0-4% faster. Here both, one process each, alternating, twice: 65,536 rows, S = 512, k = 32
# and 64.
source experiments/device/common.sh
topk="python -m experiments.bench_ops --op=topk --repeats=30 --dtype=float32 --topk_rows=65536 --topk_sub_keys=512 --topk_k=32,64"
for round in a b; do
  step "t_default_$round" 45 devrun/m62 $topk --tilings=default
  step "t_maxmin_$round" 45 devrun/m62 $topk --tilings=pick=max_min
done
grep -ho '"tiling": "[^"]*"\|"fwd_back_to_back_ms": [0-9.]*\|"same_ids_as_xla": [a-z]*' "$OUT"/t_*.log >> "$OUT/calls.log"
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
