# Session 37, call b (issue 12): this tree's top-k (call a's changes, plus one compare per
# final round against the better of the two tails' heads, one reduction over the rows and
# one `lax.cond` for both tails, the tails advanced for the rows that took them without a
# select over their whole state, and the group reload unmasked) against HEAD's before
# session 37 (devrun/h36, carried: `git archive d29e4b6`), in alternating processes at every
# timed shape; `pick=max_min` and `lazy_tail=false` beside this tree's default; then the
# compiled tests of the default and XLA's build of it.
source experiments/device/common.sh
TOPK="python -m experiments.bench_ops --op=topk --dtype=float32 --repeats=30 --topk_rows=65536"
step new_a 70 . $TOPK --topk_sub_keys=512 --topk_k=32 --tilings=default,pick=max_min,lazy_tail=false
step old_a 50 devrun/h36 $TOPK --topk_sub_keys=512 --topk_k=32 --tilings=default
step new_b 50 . $TOPK --topk_sub_keys=512 --topk_k=32 --tilings=default
step old_b 50 devrun/h36 $TOPK --topk_sub_keys=512 --topk_k=32 --tilings=default
step new_c 70 . $TOPK --topk_sub_keys=256,1024 --topk_k=32 --tilings=default
step old_c 70 devrun/h36 $TOPK --topk_sub_keys=256,1024 --topk_k=32 --tilings=default
step new_d 90 . $TOPK --topk_sub_keys=512,1024 --topk_k=64 --tilings=default
step old_d 90 devrun/h36 $TOPK --topk_sub_keys=512,1024 --topk_k=64 --tilings=default
cat "$OUT"/new_*.log "$OUT"/old_*.log > "$OUT/topk.log"; rm -f "$OUT"/new_*.log "$OUT"/old_*.log
step tests 200 . python -m pytest -q -m gpu tests/pallas_kernels/product_key/test_topk.py \
  -k "compiled_matches and pallas or compiled_kernel_configs and default"
export JAX_COMPILATION_CACHE_DIR=/tmp/jc JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0 JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES=0
step cache 40 . $TOPK --topk_rows=1024 --repeats=1 --topk_sub_keys=512 --topk_k=32 --tilings=default
unset JAX_COMPILATION_CACHE_DIR
( cd /tmp && tar czf "$OUT/jc_topk.tgz" jc ) 2>> "$OUT/calls.log"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
