# Call 65c: carry .whl and devrun (session65_copies.sh); any card; about 420 s. Session
# 64's two planned calls in one, the decisive timing first, so that a call cut short by
# DEADLINE still decides (session 65's starts were all refused). Main (m65), branch
# fast-exact-test (x65: the exactness check by Fast2Sum's test) and branch
# count-if-inexact (c65, on x65: no tie counts where every sum is exact), at 65,536 rows,
# S = 512, on float32 and bf16-grid rows, one process each, alternating: k = 32 twice (main also with `exact_order=false` once, the floor), k = 64
# once. Then c65's compiled tests, then the other shapes for c65 and main. Merge the
# faster branch if it is ahead at S = 512, k = 32 and behind nowhere beyond noise.
source experiments/device/common.sh
flagged="python -m experiments.device.time_topk_flagged --rows=65536 --sub_keys=512 --inputs=normal,bf16_grid"
for round in a b; do
  for tree in m65 x65 c65; do
    tilings=default
    [ "$tree$round" = m65a ] && tilings=default,exact_order=false
    step "f_${tree}_32_$round" 40 "devrun/$tree" $flagged --k=32 --tilings=$tilings
  done
done
for tree in m65 x65 c65; do
  step "f_${tree}_64_a" 40 "devrun/$tree" $flagged --k=64 --tilings=default
done
step t_tests 210 devrun/c65 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q -n 6 -m gpu \
  tests/pallas_kernels/product_key/test_topk.py \
  -k "compiled_matches or default or block_rows-2] or exact_order or lazy_tail-False]"
topk="python -m experiments.bench_ops --op=topk --repeats=30 --dtype=float32 --topk_rows=65536"
for tree in c65 m65; do
  step "t_${tree}_k32" 50 "devrun/$tree" $topk --topk_sub_keys=256,1024 --topk_k=32
  step "t_${tree}_k64" 50 "devrun/$tree" $topk --topk_sub_keys=1024 --topk_k=64
done
grep -ho '"sub_keys": [0-9]*\|"k": [0-9]*\|"fwd_back_to_back_ms": [0-9.]*\|"same_ids_as_xla": [a-z]*' \
  "$OUT"/t_*_k*.log | tr '\n' ' ' >> "$OUT/calls.log"
cat "$OUT"/t_*.log "$OUT"/f_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log "$OUT"/f_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
