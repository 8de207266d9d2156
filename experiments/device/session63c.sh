# Call 63c: run at the root of branch `candidates-part-by-part` (its second commit:
# `form_parts_together`, False by default from k = 64), carry .whl; any card (about 200 s).
# The compiled tests of the new config, then, in one process per order, the default (parts
# one at a time) against `block_rows=2` (every part formed together, main's build) at S =
# 512 and 1,024, k = 64, 65,536 rows.
source experiments/device/common.sh
step t_tests 100 . env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q -n 6 -m gpu \
  tests/pallas_kernels/product_key/test_topk.py -k "form_parts or compiled_matches"
topk="python -m experiments.bench_ops --op=topk --repeats=30 --dtype=float32 --topk_rows=65536"
step t_a 60 . $topk --topk_sub_keys=512,1024 --topk_k=64 --tilings=default,block_rows=2
step t_b 60 . $topk --topk_sub_keys=512,1024 --topk_k=64 --tilings=block_rows=2,default
grep -ho '"tiling": "[^"]*"\|"sub_keys": [0-9]*\|"fwd_back_to_back_ms": [0-9.]*\|"same_ids_as_xla": [a-z]*' \
  "$OUT"/t_a.log "$OUT"/t_b.log | tr '\n' ' ' >> "$OUT/calls.log"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
