# Session 37, call a (issue 12): this tree's top-k (the group bests found on the float
# scores, shifts for the group index, no masks where S is a power of two, a three-operation
# ordered key) against HEAD's before it (devrun/h36, carried: `git archive d29e4b6`), in
# alternating processes; `merge_tails=true` and `lazy_tail=false` beside this tree's default;
# then the compiled tests of the default and the merged tails, and XLA's build of both.
# (`merge_tails` was dropped after this call, 27% slower: WORKSPACE.md, issue 12, session 37.)
source experiments/device/common.sh
TOPK="python -m experiments.bench_ops --op=topk --dtype=float32 --repeats=30 --topk_rows=65536"
step new_a 90 . $TOPK --topk_sub_keys=512 --topk_k=32 --tilings=default,merge_tails=true,lazy_tail=false
step old_a 60 devrun/h36 $TOPK --topk_sub_keys=512 --topk_k=32 --tilings=default,lazy_tail=false
step new_b 60 . $TOPK --topk_sub_keys=512 --topk_k=32 --tilings=default,merge_tails=true
step old_b 50 devrun/h36 $TOPK --topk_sub_keys=512 --topk_k=32 --tilings=default
step new_c 110 . $TOPK --topk_sub_keys=1024 --topk_k=32 --tilings=default,merge_tails=true
step new_d 110 . $TOPK --topk_sub_keys=512,1024 --topk_k=64 --tilings=default,merge_tails=true
cat "$OUT"/new_*.log "$OUT"/old_*.log > "$OUT/topk.log"; rm -f "$OUT"/new_*.log "$OUT"/old_*.log
step tests 150 . python -m pytest -q -m gpu tests/pallas_kernels/product_key/test_topk.py \
  -k "compiled_matches or merge_tails-True or compiled_kernel_configs and default"
export JAX_COMPILATION_CACHE_DIR=/tmp/jc JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0 JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES=0
step cache 60 . $TOPK --topk_rows=1024 --repeats=1 --topk_sub_keys=512 --topk_k=32 --tilings=default,merge_tails=true
unset JAX_COMPILATION_CACHE_DIR
( cd /tmp && tar czf "$OUT/jc_topk.tgz" jc ) 2>> "$OUT/calls.log"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
