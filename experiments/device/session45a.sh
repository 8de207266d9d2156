# Ran in session 45 (call 45a); its L32 steps need a tree from before 5d1eda8 (690f010).
# Session 45, call a (issues 11 and 12). Session 45's first call (44c) found sdm_small's step
# at 51.3 ms against session 43's 44.3: the pair weights' backward kernel with dk stored per
# writer (8a0cf0d) took 4.4 + 4.2 ms per step where it took about 0.23 ms a launch before.
# With 8a0cf0d reverted, the step against session 43's tree (devrun/h43, carried) times
# session 44's two other cuts; then the top-k's L32 form (compiled tests, then timed against
# the default and exact_order=false at S = 512, k = 32, one process each, alternating).
source experiments/device/common.sh
STEP="python -m experiments.bench_ops --op=train_step --train_configs=sdm_small --repeats=10"
step s_head_a 70 . $STEP
step s_h43_a 70 devrun/h43 $STEP
step s_head_b 70 . $STEP
step s_h43_b 70 devrun/h43 $STEP
grep -o '"config": "[^"]*".*"step_back_to_back_ms": [0-9.]*' "$OUT"/s_*.log >> "$OUT/calls.log"
cat "$OUT"/s_*.log > "$OUT/steps.log"; rm -f "$OUT"/s_*.log
step tests 100 . env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q -n 8 tests/pallas_kernels/product_key/test_topk.py \
  -k "compiled_kernel_configs and (default or candidate_lanes)"
T32="python -m experiments.bench_ops --op=topk --repeats=30 --topk_rows=65536 --topk_sub_keys=512 --topk_k=32 --dtype=float32"
L32="candidate_lanes=32;group_chunk=4"
step t_base_a 40 . $T32 --tilings=default
step t_l32_a 40 . $T32 "--tilings=$L32"
step t_fast_a 40 . $T32 --tilings=exact_order=false
step t_l32_b 40 . $T32 "--tilings=$L32"
step t_base_b 40 . $T32 --tilings=default
grep -o '"tiling": "[^"]*".*"fwd_back_to_back_ms": [0-9.]*' "$OUT"/t_*.log | sed 's/"block_rows.*"fwd_back/ fwd_back/' >> "$OUT/calls.log"
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
