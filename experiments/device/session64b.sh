# Call 64b: carry .whl and devrun (from session64b_copies.sh); any card (name nvidia-h200;
# about 530 s). Branch `lazy-residuals` (l64: the exact frontier's candidates stored as
# (key, slot) only, a round computing residuals from the reloaded scores only in a program
# where some row has two heads of the best key; XLA's build 96 registers at S = 512, k = 32
# against main's 118, equal at k = 64) against main (m64). Its compiled tests of the
# frontier configs; then issue 12's shape (65,536 rows, S = 512, k = 32), one process per
# tree, alternating, three times; then the other four shapes, once each; then every
# program's rows swamped (the branch's tie-breaking in every program, its worst case).
# Merge if it wins at S = 512, k = 32 and loses nowhere by more than noise.
source experiments/device/common.sh
step t_tests 210 devrun/l64 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q -n 6 -m gpu \
  tests/pallas_kernels/product_key/test_topk.py \
  -k "compiled_matches or default or block_rows-2] or exact_order or lazy_tail-False]"
topk="python -m experiments.bench_ops --op=topk --repeats=30 --dtype=float32 --topk_rows=65536"
for round in a b c; do
  for tree in m64 l64; do
    step "t_${tree}_$round" 40 "devrun/$tree" $topk --topk_sub_keys=512 --topk_k=32
  done
done
for tree in l64 m64; do
  step "t_${tree}_k32" 50 "devrun/$tree" $topk --topk_sub_keys=256,1024 --topk_k=32
  step "t_${tree}_k64" 50 "devrun/$tree" $topk --topk_sub_keys=512,1024 --topk_k=64
done
for tree in m64 l64; do
  step "t_${tree}_flagged" 40 "devrun/$tree" python -m experiments.device.time_topk_flagged \
    --rows=65536 --sub_keys=512 --k=32 --tilings=default
done
grep -ho '"sub_keys": [0-9]*\|"k": [0-9]*\|"fwd_back_to_back_ms": [0-9.]*\|"same_ids_as_xla": [a-z]*' \
  "$OUT"/t_m64_*.log "$OUT"/t_l64_*.log | tr '\n' ' ' >> "$OUT/calls.log"
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
