# Call 60a: carry .whl and devrun (from session59b_copies.sh); about 360 s on an H100. Before
# merging branch `threshold-early-exit` (r59), after call 59b (its 80 s cut r59's compiled
# tests off after 11 of 15 passed):
# 1. r59's compiled tests of the threshold selections, all 15, with room to finish.
# 2. A second round of `sdm_small`'s step, m59 and r59, then `gdn_small`'s for issue 11's
#    ratio (59b's round: r59 41.62 ms against m59's 41.86).
# 3. Whether the faster threshold selections now beat the groups at S = 512, k = 64
#    (`THRESHOLD_MAX_SUB_KEYS_PER_K` = 8 would give them that shape): r59's default against
#    threshold selections, 65,536 rows.
source experiments/device/common.sh
step tests_r59 240 devrun/r59 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q \
  -n 4 tests/pallas_kernels/product_key/test_topk.py \
  -k "compiled_matches or (compiled_kernel_configs and threshold)"
GDN_TREE=m59 step_rounds "b" m59 r59
step t_wide_r59 60 devrun/r59 python -m experiments.bench_ops --op=topk --repeats=50 \
  --dtype=float32 --topk_rows=65536 --topk_sub_keys=512 --topk_k=64 \
  --tilings="default,half_select=threshold;final_select=threshold;block_rows=1"
mv "$OUT/t_wide_r59.log" "$OUT/topk.log"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
