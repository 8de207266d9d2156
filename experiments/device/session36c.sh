# Session 36, call c (issue 12): the lazy tails' first form (devrun/v1, carried: each round
# compares the two heads with the group bests' winner; what call a most likely ran) against
# the default, with this tree's form (heads written into groups of their own) once beside
# it, forward back to back; then the first form's compiled tests.
source experiments/device/common.sh
TOPK="python -m experiments.bench_ops --op=topk --dtype=float32 --repeats=30 --topk_rows=65536 --tilings=default,lazy_tail=true"
step v1_32 100 devrun/v1 $TOPK --topk_sub_keys=256,512,1024 --topk_k=32
step v3_32 100 . $TOPK --topk_sub_keys=256,512,1024 --topk_k=32
step v1_64 100 devrun/v1 $TOPK --topk_sub_keys=512,1024 --topk_k=64
cat "$OUT"/v[13]_*.log > "$OUT/forms.log"; rm -f "$OUT"/v[13]_*.log
step v1_tests 150 devrun/v1 python -m pytest -q -m gpu tests/pallas_kernels/product_key/test_topk.py -k "True"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
