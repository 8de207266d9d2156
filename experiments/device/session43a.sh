# Session 43, call a (issue 12): first the compiled top-k tests on the frontier that compares
# its heads exactly (defd09a; session 42's call f lost its machine before they ran): the
# default against brute force, the rounding-tie and swamped rows (30 tests); then the default
# and `exact_order=false` timed at S = 512, k = 32, one process each, alternating, the
# default's first process keeping XLA's build (cached_binaries) for the instruction counts.
source experiments/device/common.sh
step tests 170 . env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q -n 8 tests/pallas_kernels/product_key/test_topk.py \
  -k "compiled_matches or (compiled_kernel_configs and default) or twin_where_rounding or frontier_is_exact or larger_exact_sum"
T32="python -m experiments.bench_ops --op=topk --repeats=30 --topk_rows=65536 --topk_sub_keys=512 --topk_k=32 --dtype=float32"
CACHE="env JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0 JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES=0"
step t_new_a 50 . $CACHE JAX_COMPILATION_CACHE_DIR=/tmp/jc/exact $T32 --tilings=default
step t_fast_a 45 . $CACHE JAX_COMPILATION_CACHE_DIR=/tmp/jc/fast $T32 --tilings=exact_order=false
for v in exact fast; do
  step bin_$v 30 . python -m experiments.cached_binaries --from_cache=/tmp/jc/$v --binaries_dir=/tmp/bin/$v
done
( cd /tmp && tar czf "$OUT/bin_topk.tgz" bin ) 2>> "$OUT/calls.log"
step t_new_b 45 . $T32 --tilings=default
step t_fast_b 45 . $T32 --tilings=exact_order=false
cat "$OUT"/t_*.log > "$OUT/topk.log"; cat "$OUT"/bin_*.log > "$OUT/bin.log"; rm -f "$OUT"/t_*.log "$OUT"/bin_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
