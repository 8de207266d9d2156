# Call 65b: carry .whl and devrun (session65_copies.sh, which also makes c65); any card
# (about 330 s). Branch count-if-inexact (c65, on fast-exact-test): where every candidate's
# sum is exact (bf16-grid rows, the layer's) the rounds count no ties at all, under a
# lax.cond on that flag that XLA's build unswitches into two loops (4,176 instructions
# against x65's 3,376; 96 registers at S = 512, k = 32 as x65, 80 against 72 at k = 64).
# Its compiled tests; then c65, x65 and main (m65) on both kinds of rows at S = 512,
# k = 32 and 64, one process each, alternating, twice. Merge c65 over x65 if it wins on
# bf16-grid rows and loses nothing beyond noise on float32 rows.
source experiments/device/common.sh
step t_tests 210 devrun/c65 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q -n 6 -m gpu \
  tests/pallas_kernels/product_key/test_topk.py \
  -k "compiled_matches or default or block_rows-2] or exact_order or lazy_tail-False]"
flagged="python -m experiments.device.time_topk_flagged --rows=65536 --sub_keys=512 --tilings=default --inputs=bf16_grid,normal"
for round in a b; do
  for tree in m65 x65 c65; do
    for k in 32 64; do
      step "f_${tree}_${k}_$round" 40 "devrun/$tree" $flagged --k=$k
    done
  done
done
cat "$OUT"/t_*.log "$OUT"/f_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log "$OUT"/f_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
