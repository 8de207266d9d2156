# Session 48's fourth call (not run: loans paused). DEADLINE=590, carry .whl and devrun/m47,
# d48, run from main's checkout.
# Issue 12: the one shape where the kernel loses to the XLA path (8 rows, S = 1,024, k = 64:
# 0.0550 ms at best against 0.0497, session 42e) with the tilings not yet tried there: the
# groups halves with the threshold final selection (no lazy tails, so both halves rank all
# k entries in two interleaved chains, then 32 counting passes over the candidates instead
# of k frontier rounds), one row per program on 1, 2 and 4 warps, and the frontier on 2
# warps. Twice, in opposite orders (a tiling measured later in a process ran up to 4%
# slower, session 38), then the new tiling's compiled cases.
# Issue 11: the dense kernels keeping their C x C products' right operands on chip (branch
# dense-registers; d48 = `git archive dense-registers pallas_kernels sdm_jax maglev_jax
# experiments pyproject.toml tests | tar -x -C devrun/d48`) against main's kernels (m47),
# `sdm_small`'s step, one process each, alternating, after d48's compiled phase-2 tests.
source experiments/device/common.sh
TOPK="python -m experiments.bench_ops --op=topk --repeats=50 --topk_rows=8 --dtype=float32 --topk_sub_keys=1024 --topk_k=64"
A="block_rows=1;num_warps=4"
T4="block_rows=1;num_warps=4;final_select=threshold"
T2="block_rows=1;num_warps=2;final_select=threshold"
T1="block_rows=1;num_warps=1;final_select=threshold"
F2="block_rows=1;num_warps=2"
step t_a 120 . $TOPK "--tilings=default,$A,$T4,$T2,$T1,$F2"
step t_b 120 . $TOPK "--tilings=$F2,$T1,$T2,$T4,$A,default"
step t_tests 70 . env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q -n 3 -m gpu tests/pallas_kernels/product_key/test_topk.py -k "compiled_kernel_configs and num_warps-4_final_select-threshold"
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
step tests_d48 110 devrun/d48 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q -n 8 -m gpu tests/pallas_kernels/sparse_delta/test_scan_pallas.py
step_rounds "a b" d48 m47
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
