# Not run: session 45 timed L32 instead (session45a.sh) and removed candidate_lanes and
# group_chunk (5d1eda8); this script needs a tree before that (690f010).
# Session 44, call a (issue 12), for the next device session: the top-k's register fields
# timed at S = 512, k = 32. XLA's own build, read without a GPU (`experiments.xla_build`,
# JAX 0.10.2's XLA; it gave 118 / 96 registers where the H200's gave 119 / 96), holds the
# exact frontier (the default) in 118 registers, 17 programs per SM, and exact_order=false
# in 96 (21); with the candidates formed part by part as stored and the groups' bests found
# 4 or 2 entries at a time: L16 96 (21), L32 80 (25), C2 80 (25); exact_order=false with
# L32 80 (25). First the compiled tests of those forms, then one process per timing,
# alternating (session 38: a tiling measured second in a process ran about 4% slower).
source experiments/device/common.sh
step tests 150 . env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q -n 8 tests/pallas_kernels/product_key/test_topk.py \
  -k "compiled_kernel_configs and (default or candidate_lanes)"
T32="python -m experiments.bench_ops --op=topk --repeats=30 --topk_rows=65536 --topk_sub_keys=512 --topk_k=32 --dtype=float32"
L16="candidate_lanes=16;group_chunk=4"
L32="candidate_lanes=32;group_chunk=4"
C2="candidate_lanes=16;group_chunk=2"
W2="candidate_lanes=64;group_chunk=2"  # the default's parts (64 and 32 lanes) formed as stored: 80 (25), 2,928 instructions
step t_base_exact_a 45 . $T32 --tilings=default
step t_l32_exact_a 45 . $T32 "--tilings=$L32"
step t_l16_exact_a 45 . $T32 "--tilings=$L16"
step t_c2_exact_a 45 . $T32 "--tilings=$C2"
step t_w2_exact_a 45 . $T32 "--tilings=$W2"
step t_base_fast_a 45 . $T32 --tilings=exact_order=false
step t_l32_fast_a 45 . $T32 "--tilings=$L32;exact_order=false"
step t_l32_exact_b 45 . $T32 "--tilings=$L32"
step t_base_exact_b 45 . $T32 --tilings=default
step t_c2_exact_b 45 . $T32 "--tilings=$C2"
step t_w2_exact_b 45 . $T32 "--tilings=$W2"
step t_l16_exact_b 45 . $T32 "--tilings=$L16"
step t_l32_fast_b 45 . $T32 "--tilings=$L32;exact_order=false"
step t_base_fast_b 45 . $T32 --tilings=exact_order=false
grep -o '"tiling": "[^"]*".*"fwd_back_to_back_ms": [0-9.]*' "$OUT"/t_*.log | sed 's/"block_rows.*"fwd_back/ fwd_back/' >> "$OUT/calls.log"
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
