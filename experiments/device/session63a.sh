# Call 63a: carry .whl and devrun (from session63_copies.sh); any card (name nvidia-h200;
# about 480 s). `exact_pass=relaunch` (session 62: the kernel compares by (key, slot) and
# checks, a second launch selects again the flagged programs) against the default (the
# frontier comparing exactly in its rounds) and `exact_order=false`: XLA builds its main
# kernel in 96 registers (21 programs per SM) against the default's 121 (16), its rounds as
# exact_order=false's plus 4 instructions. First its compiled tests; then issue 12's shape
# (65,536 rows, S = 512, k = 32), one process per tiling, alternating, twice; then the
# other shapes it reaches (S = 256 and 1,024 at k = 32; S = 512 and 1,024 at k = 64, 2 rows)
# and the SDM step's (S = 128, k = 64: threshold selections, 1 row a program), and every
# program flagged (time_topk_flagged: swamped rows). Keep the relaunch as the
# default where it wins, else remove the field.
source experiments/device/common.sh
step t_tests 120 devrun/m63 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q -n 4 -m gpu \
  tests/pallas_kernels/product_key/test_topk.py -k "relaunch or compiled_matches"
topk="python -m experiments.bench_ops --op=topk --repeats=30 --dtype=float32 --topk_rows=65536"
for round in a b; do
  for spec in default exact_pass=relaunch exact_order=false; do
    step "t_${spec%%=*}_$round" 40 devrun/m63 $topk --topk_sub_keys=512 --topk_k=32 "--tilings=$spec"
  done
done
for spec in default exact_pass=relaunch; do
  step "t_${spec%%=*}_k32" 50 devrun/m63 $topk --topk_sub_keys=256,1024 --topk_k=32 "--tilings=$spec"
  step "t_${spec%%=*}_k64" 50 devrun/m63 $topk --topk_sub_keys=512,1024 --topk_k=64 "--tilings=$spec"
  # the SDM step's shape, where both selections are the threshold form's
  step "t_${spec%%=*}_s128" 40 devrun/m63 $topk --topk_sub_keys=128 --topk_k=64 "--tilings=$spec"
done
step t_flagged 60 devrun/m63 python -m experiments.device.time_topk_flagged --rows=65536 \
  --sub_keys=512 --k=32 --tilings=default,exact_pass=relaunch
grep -ho '"tiling": "[^"]*"\|"sub_keys": [0-9]*\|"k": [0-9]*\|"fwd_back_to_back_ms": [0-9.]*\|"same_ids_as_xla": [a-z]*' \
  "$OUT"/t_*.log | tr '\n' ' ' >> "$OUT/calls.log"
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
