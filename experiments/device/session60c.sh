# Call 60c: carry .whl and devrun (from session60_copies.sh); about 300 s. Issue 12's decode
# shapes with main's faster threshold selections (the few-rows default; session 59 had it
# 2.6-3.4 us behind the XLA path forward at 8 rows, S = 1,024, and 7.7 us at 128 rows, S =
# 128, k = 64, one process each): the kernel against the XLA path in the same process,
# 500 calls back to back, three processes at 8 rows and two at 128. First the compiled
# tests of the threshold halves' ids in their keys, after the fix that counts only all-zero
# low bits as free (and the tests of 60a's set).
source experiments/device/common.sh
step tests_m60 150 devrun/m60 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q \
  -n 4 tests/pallas_kernels/product_key/test_topk.py \
  -k "keep_ids_out or carry_their_ids or compiled_matches or (compiled_kernel_configs and threshold)"
topk="python -m experiments.bench_ops --op=topk --repeats=500 --dtype=float32"
for run in a b c; do
  step "t_few_$run" 60 devrun/m60 $topk --topk_rows=8 --topk_sub_keys=128,1024 --topk_k=32,64
done
for run in a b; do
  step "t_128_$run" 40 devrun/m60 $topk --topk_rows=128 --topk_sub_keys=128 --topk_k=64
done
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
