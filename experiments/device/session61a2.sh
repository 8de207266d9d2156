# Call 61a': carry .whl and devrun (session60_copies.sh's m60 = main, and `archive m60p
# 869599e`, the tree before 5c61710); about 290 s. 5c61710 (`_thresholds` takes each set's
# count at its sign cut without counting again) was neither compiled nor timed in session
# 60: the 19 compiled threshold tests on main, then the top-k at the step's shapes (65,536
# rows, S = 128 and 256, k = 64), before it against main, alternating, two processes each.
source experiments/device/common.sh
step tests_m60 240 devrun/m60 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q \
  -n 4 tests/pallas_kernels/product_key/test_topk.py \
  -k "keep_ids_out or carry_their_ids or compiled_matches or (compiled_kernel_configs and threshold)"
for r in a b; do
  for t in m60p m60; do
    step "t_${t}_$r" 60 "devrun/$t" python -m experiments.bench_ops --op=topk --repeats=50 \
      --dtype=float32 --topk_rows=65536 --topk_sub_keys=128,256 --topk_k=64
  done
done
cat "$OUT"/t_*.log > "$OUT/topk.log"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
