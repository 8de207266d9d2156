# Call 64g: carry .whl and devrun (session64d_copies.sh: e64 = branch exact-sums at its
# tail-count commit); any card (about 330 s). e64's compiled tests of the frontier configs,
# then e64 and main (m64) at the shapes call 64f left: S = 256 and 1,024 at k = 32,
# S = 1,024 at k = 64, float32 and bf16-grid rows, one process per tree and shape.
source experiments/device/common.sh
step t_tests 210 devrun/e64 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q -n 6 -m gpu \
  tests/pallas_kernels/product_key/test_topk.py \
  -k "compiled_matches or default or block_rows-2] or exact_order or lazy_tail-False]"
flagged="python -m experiments.device.time_topk_flagged --rows=65536 --tilings=default --inputs=normal,bf16_grid"
for shape in "256 32" "1024 32" "1024 64"; do
  set -- $shape
  for tree in e64 m64; do
    step "t_${tree}_$1_$2" 40 "devrun/$tree" $flagged --sub_keys=$1 --k=$2
  done
done
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
