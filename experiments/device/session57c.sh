# Session 57's last call, cut to the device time left after refused starts (DEADLINE=210,
# carry .whl and devrun; devrun from session56_copies.sh, then session57_copies.sh): mg57's
# compiled tests, one round of m56, mg57 and `gdn_small`, issue 12's decode shapes
# (the default tiling against one row and one warp a program with the threshold final
# selection), then a second round as time allows. The deadline cuts from the end.
source experiments/device/common.sh
step tests_mg57 100 devrun/mg57 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q \
  -m gpu tests/pallas_kernels/sparse_delta/test_batch_copies.py \
  tests/pallas_kernels/sparse_delta/test_scan_pallas.py \
  -k "copies or bfloat16_outputs or (float32 and compiled)"
GDN_TREE=m56 step_rounds "a" m56 mg57
topk="python -m experiments.bench_ops --op=topk --repeats=50 --topk_rows=8 --dtype=float32 --topk_sub_keys=256,512,1024 --topk_k=32,64"
step t_a 80 devrun/m56 $topk "--tilings=default,block_rows=1;num_warps=1;final_select=threshold"
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
GDN_TREE=m56 step_rounds "b" mg57 m56
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
