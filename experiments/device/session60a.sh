# Call 60a: carry .whl and devrun (from session60_copies.sh); about 360 s on an H100. After
# merging branch `threshold-early-exit` (59b's r59; m60 = main now, m59 = main before), as
# call 59b's 80 s cut its compiled tests off after 11 of 15 passed:
# 1. m60's compiled tests of the threshold selections, all 15, with room to finish.
# 2. A second round of `sdm_small`'s step, m59 and m60, then `gdn_small`'s for issue 11's
#    ratio (59b's round: r59 41.62 ms against m59's 41.86).
# 3. Whether the faster threshold selections now beat the groups at S = 512, k = 64
#    (`THRESHOLD_MAX_SUB_KEYS_PER_K` = 8 would give them that shape) or k = 32 (issue 12's
#    0.33 ms shape), both steps or the halves alone (with the frontier final selection, on
#    1 or 2 rows a program): m60's default against them, 65,536 rows.
source experiments/device/common.sh
step tests_m60 240 devrun/m60 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q \
  -n 4 tests/pallas_kernels/product_key/test_topk.py \
  -k "compiled_matches or (compiled_kernel_configs and threshold)"
GDN_TREE=m59 step_rounds "b" m59 m60
step t_wide_m60 100 devrun/m60 python -m experiments.bench_ops --op=topk --repeats=50 \
  --dtype=float32 --topk_rows=65536 --topk_sub_keys=512 --topk_k=32,64 \
  --tilings="default,half_select=threshold;final_select=threshold;block_rows=1,\
half_select=threshold;block_rows=1,half_select=threshold;block_rows=2"
mv "$OUT/t_wide_m60.log" "$OUT/topk.log"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
