# Session 35, call c (issue 12): the compiled top-k config tests that calls a and b did not
# reach (S = 128, k = 64, and the threshold configs at S = 1,024, k = 64; the first of those
# two passed in call b).
source experiments/device/common.sh
step topk_config_tests 320 . python -m pytest -q -m gpu tests/pallas_kernels/product_key -k "configs and not 512-32 and (128-64 or threshold)"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
