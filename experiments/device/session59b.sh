# Call 59b: carry .whl and devrun (from session59b_copies.sh); DEADLINE=560 runs all of it,
# DEADLINE=340 (about 330 s on an H100) keeps steps 1-3 and part of 4. Branch
# `threshold-early-exit` against main (m59), in two steps: e59 (the threshold selections'
# bit counts stop early) and r59 (also their ranks by key alone). In order, so that a
# deadline cut from the end keeps main against r59:
# 1. r59's compiled tests of the threshold selections (the few-rows default and the
#    threshold configs).
# 2. The top-k at 65,536 rows where the default takes the threshold selections (S = 128,
#    `sdm_small`'s training shape, and 256, k = 64), one process each: m59, r59.
# 3. One round of `sdm_small`'s step in m59 and r59 (its top-k: 1.17 ms of main's step on
#    an H100, call 59a's profile), then `gdn_small`'s (m59) for issue 11's ratio.
# 4. The top-k again (r59, m59, then e59 twice), e59's step, the decode shapes (8 rows).
source experiments/device/common.sh
step tests_r59 80 devrun/r59 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q \
  -n 4 tests/pallas_kernels/product_key/test_topk.py \
  -k "compiled_matches or (compiled_kernel_configs and threshold)"
topk="python -m experiments.bench_ops --op=topk --repeats=50 --dtype=float32"
many() {
  local run
  for run in "$@"; do
    step "t_many_$run" 60 "devrun/${run%_*}" $topk --topk_rows=65536 --topk_sub_keys=128,256 --topk_k=64
  done
}
many m59_a r59_a
GDN_TREE=m59 step_rounds "a" m59 r59
many r59_b m59_b e59_a e59_b
step_rounds "a" e59
for run in r59_a m59_a; do
  step "t_few_$run" 70 "devrun/${run%_*}" $topk --topk_rows=8 --topk_sub_keys=128,512,1024 --topk_k=32,64
done
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
