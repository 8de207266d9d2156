# Session 37, call c (issue 12): where this tree's top-k lost 15% at S = 1,024, k = 64
# (call b: 1.220 ms back to back against 1.061 at d29e4b6, devrun/h36) while gaining 5-14%
# elsewhere. Copies of this tree with one of call a's changes undone, carried (devrun/):
# `nostart` (the group bests found on keys again), `masked` (loads masked as where S is not a
# power of two), `oldkey` (the five-operation ordered key); tilings at that shape; the same
# copies at S = 512, k = 32; then XLA's build of this tree and d29e4b6 at S = 1,024, k = 64.
source experiments/device/common.sh
TOPK="python -m experiments.bench_ops --op=topk --dtype=float32 --repeats=30 --topk_rows=65536"
T64="$TOPK --topk_sub_keys=1024 --topk_k=64 --tilings=default"
T32="$TOPK --topk_sub_keys=512 --topk_k=32 --tilings=default"
step new_a 60 . $TOPK --topk_sub_keys=1024 --topk_k=64 --tilings=default,block_rows=2,group_size=32
step old_a 40 devrun/h36 $T64
for v in nostart masked oldkey; do step ${v}_a 40 devrun/$v $T64; done
step new_b 40 . $T64
step old_b 40 devrun/h36 $T64
for v in nostart masked oldkey; do step ${v}_c 30 devrun/$v $T32; done
step new_c 30 . $T32
cat "$OUT"/*_[abc].log > "$OUT/topk.log"; rm -f "$OUT"/*_[abc].log
export JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0 JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES=0
JAX_COMPILATION_CACHE_DIR=/tmp/jc/new step cache_new 30 . $TOPK --topk_rows=1024 --repeats=1 --topk_sub_keys=1024 --topk_k=64 --tilings=default
JAX_COMPILATION_CACHE_DIR=/tmp/jc/old step cache_old 30 devrun/h36 $TOPK --topk_rows=1024 --repeats=1 --topk_sub_keys=1024 --topk_k=64 --tilings=default
( cd /tmp && tar czf "$OUT/jc_topk64.tgz" jc ) 2>> "$OUT/calls.log"
cat "$OUT"/cache_*.log > "$OUT/cache.log"; rm -f "$OUT"/cache_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
