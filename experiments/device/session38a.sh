# Session 38, call a (issue 12): the final frontier (`final_select="frontier"`: one max and
# one min per round over the first half's ranks, each lane's next pair loaded a round
# ahead) against the groups tournament (the default), in alternating processes at the
# target shape, then at the other 65,536-row shapes; its compiled tests; XLA's build of both.
# The frontier was dropped after this call (slower at four of five shapes: WORKSPACE.md,
# issue 12, session 38); it ran on 344ec34 with the diff kept as
# devrun/frontier_session38.diff, so this script no longer runs on later trees.
source experiments/device/common.sh
TOPK="python -m experiments.bench_ops --op=topk --dtype=float32 --repeats=30 --topk_rows=65536"
F="final_select=frontier"
export JAX_COMPILATION_CACHE_DIR=/tmp/jc JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0 JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES=0
step t_a 80 . $TOPK --topk_sub_keys=512 --topk_k=32 --tilings="default,$F,$F;block_rows=2,$F;block_rows=8;num_warps=2"
unset JAX_COMPILATION_CACHE_DIR
( cd /tmp && tar czf "$OUT/jc_topk.tgz" jc ) 2>> "$OUT/calls.log"
step t_b 60 . $TOPK --topk_sub_keys=512 --topk_k=32 --tilings="$F,default"
step t_c 90 . $TOPK --topk_sub_keys=256,1024 --topk_k=32 --tilings="default,$F"
step t_d 110 . $TOPK --topk_sub_keys=512,1024 --topk_k=64 --tilings="default,$F,$F;block_rows=4"
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
step tests 120 . python -m pytest -q -m gpu tests/pallas_kernels/product_key/test_topk.py \
  -k "compiled_kernel_configs and final_select-frontier"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
