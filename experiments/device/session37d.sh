# Session 37, call d (issue 12): the final tree (call b's changes with the group bests found
# on keys again, call c's `nostart` copy) against d29e4b6 (devrun/h36, carried) in
# alternating processes at every benchmarked shape, `block_rows=2` beside the default at k =
# 64; then the compiled tests of the default.
source experiments/device/common.sh
TOPK="python -m experiments.bench_ops --op=topk --dtype=float32 --repeats=30 --topk_rows=65536"
step new_a 40 . $TOPK --topk_sub_keys=512 --topk_k=32 --tilings=default
step old_a 40 devrun/h36 $TOPK --topk_sub_keys=512 --topk_k=32 --tilings=default
step new_b 60 . $TOPK --topk_sub_keys=256,1024 --topk_k=32 --tilings=default
step old_b 60 devrun/h36 $TOPK --topk_sub_keys=256,1024 --topk_k=32 --tilings=default
step new_c 70 . $TOPK --topk_sub_keys=512,1024 --topk_k=64 --tilings=default,block_rows=2
step old_c 60 devrun/h36 $TOPK --topk_sub_keys=512,1024 --topk_k=64 --tilings=default
step new_d 30 . $TOPK --topk_sub_keys=512 --topk_k=32 --tilings=default
cat "$OUT"/new_*.log "$OUT"/old_*.log > "$OUT/topk.log"; rm -f "$OUT"/new_*.log "$OUT"/old_*.log
step tests 170 . python -m pytest -q -m gpu tests/pallas_kernels/product_key/test_topk.py \
  -k "compiled_matches and pallas or compiled_kernel_configs and default"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
