# Session 37, call e (issue 12): the compiled tests of `block_rows=2` (7% and 4% faster than
# the default at S = 512 and 1,024, k = 64 in call d), then both again at k = 64.
source experiments/device/common.sh
step tests 80 . python -m pytest -q -m gpu tests/pallas_kernels/product_key/test_topk.py \
  -k "compiled_kernel_configs and block_rows-2"
step topk 50 . python -m experiments.bench_ops --op=topk --dtype=float32 --repeats=30 \
  --topk_rows=65536 --topk_sub_keys=512,1024 --topk_k=64 --tilings=default,block_rows=2
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
