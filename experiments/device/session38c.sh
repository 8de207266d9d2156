# Session 38, call c (issue 12): the top-k's straight-line code with less live at once. This
# tree stores each candidate part as soon as it is formed (pip Triton: 163 -> 128
# registers at S = 512, k = 32) against HEAD before it (devrun/h37, carried: `git archive
# 344ec34`), in alternating processes, with copies that also find the halves' group bests
# in blocks of 8 or 16 groups (`_START_BLOCK_GROUPS`), cap candidate parts at 32 lanes, or
# put a barrier between the halves' starts; XLA's build of this tree and of HEAD (only the
# top-k's cubins come back); this tree at the other shapes; its compiled tests.
# None of it was kept (ties; XLA's build 96 -> 80 registers with blocks of 8, no faster:
# WORKSPACE.md, issue 12, session 38), so the copies' edits fail loudly on later trees.
source experiments/device/common.sh
TOPK="python -m experiments.bench_ops --op=topk --dtype=float32 --repeats=30 --topk_rows=65536"
FILE=pallas_kernels/product_key/topk_pallas.py
copy sb8 's = s.replace("_START_BLOCK_GROUPS = None", "_START_BLOCK_GROUPS = 8")' $FILE
copy sb16 's = s.replace("_START_BLOCK_GROUPS = None", "_START_BLOCK_GROUPS = 16")' $FILE
copy lanes32 's = s.replace("_CANDIDATE_PART_MAX_LANES = None", "_CANDIDATE_PART_MAX_LANES = 32")' $FILE
copy barrier 's = s.replace("_START_BARRIER = False", "_START_BARRIER = True")' $FILE
T="$TOPK --topk_sub_keys=512 --topk_k=32 --tilings=default"
step t_new_a 50 . $T
step t_old_a 40 devrun/h37 $T
step t_sb8_a 40 devrun/sb8 $T
step t_sb16_a 40 devrun/sb16 $T
step t_lanes32_a 40 devrun/lanes32 $T
step t_barrier_a 40 devrun/barrier $T
step t_new_b 40 . $T
step t_old_b 40 devrun/h37 $T
step t_sb8_b 40 devrun/sb8 $T
step t_sb16_b 40 devrun/sb16 $T
# XLA's build: one small run each with the cache on, then only the top-k's cubins.
export JAX_COMPILATION_CACHE_DIR=/tmp/jc JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0 JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES=0
for tree in new:. old:devrun/h37 sb8:devrun/sb8; do
  name=${tree%%:*}; dir=${tree#*:}; rm -rf /tmp/jc
  step cache_$name 40 $dir python -m experiments.bench_ops --op=topk --dtype=float32 --repeats=1 \
    --topk_rows=1024 --topk_sub_keys=512 --topk_k=32 --tilings=default
  step bins_$name 40 . python -m experiments.cached_binaries --from_cache=/tmp/jc --binaries_dir=/tmp/bins_$name
  mkdir -p /tmp/topk_bins/$name && cp /tmp/bins_$name/*topk* /tmp/topk_bins/$name/ 2>> "$OUT/calls.log"
done
unset JAX_COMPILATION_CACHE_DIR
( cd /tmp && tar czf "$OUT/topk_bins.tgz" topk_bins ) 2>> "$OUT/calls.log"
cat "$OUT"/cache_*.log "$OUT"/bins_*.log > "$OUT/cache.log"; rm -f "$OUT"/cache_*.log "$OUT"/bins_*.log
step t_new_o 90 . $TOPK --topk_sub_keys=256,1024 --topk_k=32 --tilings=default
step t_old_o 90 devrun/h37 $TOPK --topk_sub_keys=256,1024 --topk_k=32 --tilings=default
step t_new_p 90 . $TOPK --topk_sub_keys=512,1024 --topk_k=64 --tilings=default
step t_old_p 90 devrun/h37 $TOPK --topk_sub_keys=512,1024 --topk_k=64 --tilings=default
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
step tests 100 . python -m pytest -q -m gpu tests/pallas_kernels/product_key/test_topk.py \
  -k "compiled_matches and pallas or compiled_kernel_configs and default"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
