# Call 63b: carry .whl and devrun (from session63b_copies.sh); any card (name nvidia-h200;
# about 480 s). Branch `candidates-part-by-part` (c63: the top-k's candidate parts formed and
# stored one at a time; XLA's build 96 registers at S = 512, k = 32 against main's 118, 78 /
# 80 / 151 / 96 against 94 / 96 / 156 / 120 at the other four shapes) against main (m63).
# Its compiled tests of the forms it touches (frontier, tournament, exact_order=false);
# then issue 12's shape (65,536 rows, S = 512, k = 32), one process per tree, alternating,
# three times; then the other four shapes, alternating, once; last, on an H200, the SDM
# kernels' compiled tests at main (issue 11 asks for them on the H200).
source experiments/device/common.sh
step t_tests 100 devrun/c63 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q -n 4 -m gpu \
  tests/pallas_kernels/product_key/test_topk.py \
  -k "compiled_matches or default or block_rows-2] or tournament or exact_order"
topk="python -m experiments.bench_ops --op=topk --repeats=30 --dtype=float32 --topk_rows=65536"
for round in a b c; do
  for tree in m63 c63; do
    step "t_${tree}_$round" 40 "devrun/$tree" $topk --topk_sub_keys=512 --topk_k=32
  done
done
for tree in c63 m63; do
  step "t_${tree}_k32" 50 "devrun/$tree" $topk --topk_sub_keys=256,1024 --topk_k=32
  step "t_${tree}_k64" 50 "devrun/$tree" $topk --topk_sub_keys=512,1024 --topk_k=64
done
grep -ho '"sub_keys": [0-9]*\|"k": [0-9]*\|"fwd_back_to_back_ms": [0-9.]*\|"same_ids_as_xla": [a-z]*' \
  "$OUT"/t_m63_*.log "$OUT"/t_c63_*.log | tr '\n' ' ' >> "$OUT/calls.log"
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  step g_sdm 200 devrun/m63 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q -m gpu \
    tests/pallas_kernels/sparse_delta
fi
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
