# Session 42, call d (issue 12): call b found `_exact_frontier`'s code costs about 8% though
# never run. Does its place in the code decide that? Copies (session42d_layout.py): `swap`,
# the fallback as the cond's first branch; `loop`, as a loop of 0 or 1 trips. Against the
# default and `exact_order=false`, one process each, alternating, S = 512, k = 32; then XLA's
# build of each (cached_binaries) to read where ptxas put the fallback.
source experiments/device/common.sh
for v in swap loop; do python3 experiments/device/session42d_layout.py $v >> "$OUT/calls.log" 2>&1; done
T32="python -m experiments.bench_ops --op=topk --repeats=30 --topk_rows=65536 --dtype=float32 --topk_sub_keys=512 --topk_k=32"
CACHE="env JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0 JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES=0"
for run in a b; do
  step t_exact_$run 50 . $CACHE JAX_COMPILATION_CACHE_DIR=/tmp/jc/exact $T32 --tilings=default
  step t_swap_$run 50 devrun/swap $CACHE JAX_COMPILATION_CACHE_DIR=/tmp/jc/swap $T32 --tilings=default
  step t_loop_$run 50 devrun/loop $CACHE JAX_COMPILATION_CACHE_DIR=/tmp/jc/loop $T32 --tilings=default
  step t_fast_$run 40 . $T32 --tilings=exact_order=false
done
for v in exact swap loop; do
  step bin_$v 30 . python -m experiments.cached_binaries --from_cache=/tmp/jc/$v --binaries_dir=/tmp/bin/$v
done
( cd /tmp && tar czf "$OUT/bin_topk.tgz" bin ) 2>> "$OUT/calls.log"
cat "$OUT"/t_*.log > "$OUT/topk.log"; cat "$OUT"/bin_*.log > "$OUT/bin.log"; rm -f "$OUT"/t_*.log "$OUT"/bin_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
