# Call 59b: DEADLINE=560, carry .whl and devrun (from session59b_copies.sh). Branch
# `threshold-early-exit` (e59) against main (m59):
# 1. e59's compiled tests of the threshold selections (the few-rows default and the
#    threshold configs).
# 2. The top-k at 65,536 rows where the default takes the threshold selections (S = 128,
#    `sdm_small`'s training shape, and 256, k = 64), one process per tree, alternating.
# 3. One round of `sdm_small`'s step in each (its top-k: 1.17 ms of main's step on an H100,
#    call 59a's profile).
# 4. The decode shapes (8 rows), one process per tree.
source experiments/device/common.sh
step tests_e59 100 devrun/e59 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q \
  -n 4 tests/pallas_kernels/product_key/test_topk.py \
  -k "compiled_matches or (compiled_kernel_configs and threshold)"
topk="python -m experiments.bench_ops --op=topk --repeats=50 --dtype=float32"
for run in m59_a e59_a e59_b m59_b; do
  step "t_many_$run" 70 "devrun/${run%_*}" $topk --topk_rows=65536 --topk_sub_keys=128,256 --topk_k=64
done
step_rounds "a" m59 e59
for run in e59_a m59_a; do
  step "t_few_$run" 60 "devrun/${run%_*}" $topk --topk_rows=8 --topk_sub_keys=128,512,1024 --topk_k=32,64
done
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
