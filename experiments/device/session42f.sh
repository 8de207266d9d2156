# Session 42, call f (issue 12): the frontier exact by construction (heads compared by key,
# then residual, then slot: one more reduction and one more load per round; no check, no
# `_exact_frontier` in its kernel) against `exact_order=false` and session 41's tree
# (devrun/h41, `git archive e430609`, carried), one process each, alternating, at S = 512,
# k = 32; bf16 once; then compiled: the default against brute force, and the rounding-tie
# and swamped rows against the twin and brute force (30 tests).
source experiments/device/common.sh
T32="python -m experiments.bench_ops --op=topk --repeats=30 --topk_rows=65536 --topk_sub_keys=512 --topk_k=32"
for run in a b; do
  step t_new_$run 45 . $T32 --dtype=float32 --tilings=default
  step t_fast_$run 40 . $T32 --dtype=float32 --tilings=exact_order=false
  step t_h41_$run 45 devrun/h41 $T32 --dtype=float32 --tilings=default
done
step t_new_bf16 45 . $T32 --dtype=bfloat16 --tilings=default
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
step tests 150 . env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q -n 8 tests/pallas_kernels/product_key/test_topk.py \
  -k "compiled_matches or (compiled_kernel_configs and default) or twin_where_rounding or frontier_is_exact or larger_exact_sum"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
