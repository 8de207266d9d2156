# Call 62e: carry .whl and devrun (from session62_copies.sh; m62 = main with FEW_ROWS_MAX =
# 2,048 and the untaken-by-subtraction reload); about 250 s. The compiled top-k tests the
# two changes reach: the default configs (groups, frontier; 4 and 2 rows a program) against
# brute force, the compiled default (now the threshold form at the tests' 256 rows) and the
# few-rows rule.
source experiments/device/common.sh
step t_tests 220 devrun/m62 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q -n 4 -m gpu \
  tests/pallas_kernels/product_key/test_topk.py \
  -k "(compiled_kernel_configs and (default or block_rows-2)) or compiled_matches or few_rows"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
