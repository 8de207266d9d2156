# Session 36, call d (issue 12): the tree with lazy tails in their first form as the default
# (call c: faster back to back at every groups shape than the form that writes heads into
# memory), against `lazy_tail=false`; then the compiled tests of the default and the
# compiled_matches tests (both now with lazy tails).
source experiments/device/common.sh
TOPK="python -m experiments.bench_ops --op=topk --dtype=float32 --repeats=30 --topk_rows=65536 --tilings=default,lazy_tail=false"
step final_32 100 . $TOPK --topk_sub_keys=256,512,1024 --topk_k=32
step final_64 100 . $TOPK --topk_sub_keys=512,1024 --topk_k=64
cat "$OUT"/final_*.log > "$OUT/final.log"; rm -f "$OUT"/final_*.log
step tests 220 . python -m pytest -q -m gpu tests/pallas_kernels/product_key -k "compiled_matches or (True and groups and tournament)"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
