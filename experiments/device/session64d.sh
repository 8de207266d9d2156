# Call 64d: carry .whl and devrun (session64d_copies.sh); any card (name nvidia-h200; about
# 330 s). Call 64c (H100): on the layer's inputs (bf16 values held in float32) branch
# lazy-residuals (l64) lost 21-24% to main (m64) where it won 3-6% on float32 rows. Branch
# exact-sums (e64) skips the residuals where every candidate's sum is exact: the three
# trees on both kinds of rows at issue 12's shape, one process each, alternating, twice;
# then e64 and m64 at S = 1,024, k = 32 and S = 512, k = 64; then e64's compiled tests.
# Merge e64 if it is ahead of main on both kinds of rows at S = 512, k = 32.
source experiments/device/common.sh
flagged="python -m experiments.device.time_topk_flagged --rows=65536 --tilings=default --inputs=bf16_grid,normal"
for round in a b; do
  for tree in m64 l64 e64; do
    step "t_${tree}_$round" 40 "devrun/$tree" $flagged --sub_keys=512 --k=32
  done
done
for tree in e64 m64; do
  step "t_${tree}_1024" 40 "devrun/$tree" $flagged --sub_keys=1024 --k=32
  step "t_${tree}_k64" 40 "devrun/$tree" $flagged --sub_keys=512 --k=64
done
step t_tests 210 devrun/e64 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q -n 6 -m gpu \
  tests/pallas_kernels/product_key/test_topk.py \
  -k "compiled_matches or default or block_rows-2] or exact_order or lazy_tail-False]"
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
