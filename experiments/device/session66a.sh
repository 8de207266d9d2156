# Call 66a: carry .whl and devrun (session66_copies.sh); any card; about 330 s. Call 65c
# (H100) found fast-exact-test 5-7% slower than main at S = 512, k = 32 and
# count-if-inexact (on it) 8% faster at k = 64 on bf16-grid rows, so neither merged. Here
# count-if-inexact's change alone on main (o66) against main (m66), 65,536 rows, S = 512,
# float32 and bf16-grid rows, one process each, alternating: k = 32 twice (main once also
# with `exact_order=false`), k = 64 twice. Then `lax.top_k` over the 1,024 candidates and
# the XLA path beside main's kernel on this card (bench_ops), then o66's compiled tests.
source experiments/device/common.sh
flagged="python -m experiments.device.time_topk_flagged --rows=65536 --sub_keys=512 --inputs=normal,bf16_grid"
for round in a b; do
  for tree in m66 o66; do
    tilings=default
    [ "$tree$round" = m66a ] && tilings=default,exact_order=false
    step "f_${tree}_32_$round" 40 "devrun/$tree" $flagged --k=32 --tilings=$tilings
  done
done
for round in a b; do
  for tree in m66 o66; do
    step "f_${tree}_64_$round" 40 "devrun/$tree" $flagged --k=64 --tilings=default
  done
done
step t_m66_512 60 devrun/m66 python -m experiments.bench_ops --op=topk --repeats=30 \
  --dtype=float32 --topk_rows=65536 --topk_sub_keys=512 --topk_k=32
topk_figures t_m66_512
step t_tests 210 devrun/o66 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q -n 6 -m gpu \
  tests/pallas_kernels/product_key/test_topk.py \
  -k "compiled_matches or default or block_rows-2] or exact_order or lazy_tail-False]"
cat "$OUT"/t_*.log "$OUT"/f_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log "$OUT"/f_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
