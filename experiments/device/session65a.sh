# Call 65a: carry .whl and devrun (session65_copies.sh); name nvidia-h200 (about 450 s).
# Session 64 merged branch exact-sums (the frontier computes residuals only where a tied
# sum is inexact): 0.352-0.355 ms at issue 12's shape on an H100 against 0.373-0.380
# before, never timed on an H200, where the target is <= 0.33 ms and main ran 0.356-0.369
# before it. Branch fast-exact-test (x65) checks exactness by Fast2Sum's test: XLA's build
# 96 registers at S = 512, k = 32 against main's 115, 72 against 80 at k = 64; untimed.
# First x65's compiled tests; then issue 12's shape (65,536 rows, S = 512, k = 32), main
# (default, `exact_order=false`: the floor without the exact order) and x65, one process
# each, alternating, three times; then both on bf16-grid rows at k = 32 and 64; then the
# four other shapes; then layer A at main (its top-k runs the frontier at S = 512, k = 64).
# Merge x65 if it is ahead at S = 512, k = 32 and behind nowhere beyond noise. Say which
# card ran it.
source experiments/device/common.sh
step t_tests 210 devrun/x65 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q -n 6 -m gpu \
  tests/pallas_kernels/product_key/test_topk.py \
  -k "compiled_matches or default or block_rows-2] or exact_order or lazy_tail-False]"
topk="python -m experiments.bench_ops --op=topk --repeats=30 --dtype=float32 --topk_rows=65536"
for round in a b c; do
  step "t_m65_$round" 40 devrun/m65 $topk --topk_sub_keys=512 --topk_k=32 \
    --tilings=default,exact_order=false
  step "t_x65_$round" 40 devrun/x65 $topk --topk_sub_keys=512 --topk_k=32
done
for tree in m65 x65; do
  for k in 32 64; do
    step "f_${tree}_$k" 40 "devrun/$tree" python -m experiments.device.time_topk_flagged \
      --rows=65536 --sub_keys=512 --k=$k --tilings=default --inputs=bf16_grid,normal
  done
  step "t_${tree}_k32" 50 "devrun/$tree" $topk --topk_sub_keys=256,1024 --topk_k=32
  step "t_${tree}_k64" 50 "devrun/$tree" $topk --topk_sub_keys=512,1024 --topk_k=64
done
step layer_a 90 devrun/m65 python -m experiments.bench_ops --op=sdm_layer --heads=1 \
  --sdm_writes=64 --sdm_reads=64 --chunk_size=32 --repeats=5 --impl=pallas --batch=2 \
  --seq_len=8192 --sdm_slots=262144 --model_dim=2048
grep -ho '"tiling": "[^"]*"\|"sub_keys": [0-9]*\|"k": [0-9]*\|"fwd_back_to_back_ms": [0-9.]*\|"same_ids_as_xla": [a-z]*' \
  "$OUT"/t_*.log | tr '\n' ' ' >> "$OUT/calls.log"
cat "$OUT"/t_*.log "$OUT"/f_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log "$OUT"/f_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
