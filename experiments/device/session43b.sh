# Session 43, call b (issue 12): register pressure, for the next device session (loans paused
# after call a). XLA's build of the exact frontier holds 119 registers (17 programs per SM)
# against exact_order=false's 96 (21); pip's Triton puts the peaks at the candidates'
# formation and the halves' start, and with candidate_lanes=16 and group_chunk=4 builds it in
# 88 (80 for exact_order=false). First the compiled tests of the new fields; then each form
# timed one process each at S = 512, k = 32, alternating, the first of the new forms keeping
# XLA's build (cached_binaries); the default also against session 42's tree (devrun/h42:
# `git archive defd09a pallas_kernels sdm_jax maglev_jax experiments pyproject.toml`,
# carried), a check that the refactor left it as it was (its IR differs only in where pure
# index arithmetic sits); then the other shapes.
source experiments/device/common.sh
step tests 120 . env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q -n 8 tests/pallas_kernels/product_key/test_topk.py \
  -k "compiled_kernel_configs and (default or candidate_lanes)"
T32="python -m experiments.bench_ops --op=topk --repeats=30 --topk_rows=65536 --topk_sub_keys=512 --topk_k=32 --dtype=float32"
LOW="candidate_lanes=16;group_chunk=4"
step t_low_exact_a 45 . $CACHE JAX_COMPILATION_CACHE_DIR=/tmp/jc/low_exact $T32 "--tilings=$LOW"
step t_low_fast_a 45 . $CACHE JAX_COMPILATION_CACHE_DIR=/tmp/jc/low_fast $T32 "--tilings=$LOW;exact_order=false"
step t_base_exact_a 45 . $T32 --tilings=default
step t_base_fast_a 45 . $T32 --tilings=exact_order=false
step t_h42_exact_a 45 devrun/h42 $T32 --tilings=default
binaries bin_topk.tgz low_exact low_fast
step t_lanes_exact_a 45 . $T32 --tilings=candidate_lanes=16
step t_chunk_exact_a 45 . $T32 --tilings=group_chunk=4
step t_cols_exact_a 45 . $T32 "--tilings=candidate_lanes=16;group_chunk=1"
step t_low_exact_b 45 . $T32 "--tilings=$LOW"
step t_base_exact_b 45 . $T32 --tilings=default
step t_h42_exact_b 45 devrun/h42 $T32 --tilings=default
step t_low_fast_b 45 . $T32 "--tilings=$LOW;exact_order=false"
step t_low_exact_bf16 45 . $T32 "--tilings=$LOW" --dtype=bfloat16
step t_shapes 120 . python -m experiments.bench_ops --op=topk --repeats=20 --topk_rows=65536 --topk_sub_keys=256,1024 --topk_k=32 \
  --dtype=float32 "--tilings=default,$LOW"
step t_shapes64 100 . python -m experiments.bench_ops --op=topk --repeats=20 --topk_rows=65536 --topk_sub_keys=512,1024 --topk_k=64 \
  --dtype=float32 "--tilings=default,$LOW"
grep -o '"tiling": "[^"]*".*"fwd_back_to_back_ms": [0-9.]*' "$OUT"/t_*.log | sed 's/"block_rows.*"fwd_back/ fwd_back/' >> "$OUT/calls.log"
cat "$OUT"/t_*.log > "$OUT/topk.log"; cat "$OUT"/bin_*.log > "$OUT/bin.log"; rm -f "$OUT"/t_*.log "$OUT"/bin_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
