# Session 36, call b (issue 12): the lazy tails as rebuilt after call a (each tail's head
# in a group of its own in the tournament's memory, written by the tail's round, so the
# common round keeps its layouts: 90 instructions against call a's 172 in pip Triton's
# build) against the default, back to back in each process; then the lazy config's
# compiled tests.
source experiments/device/common.sh
TOPK="python -m experiments.bench_ops --op=topk --dtype=float32 --repeats=30 --topk_rows=65536 --tilings=default,lazy_tail=true"
step lazy_1 100 . $TOPK --topk_sub_keys=256,512,1024 --topk_k=32
step lazy_2 100 . $TOPK --topk_sub_keys=512,1024 --topk_k=64
step lazy_3 100 . $TOPK --topk_sub_keys=256,512,1024 --topk_k=32
cat "$OUT"/lazy_*.log > "$OUT/lazy.log"; rm -f "$OUT"/lazy_[0-9].log
step tests 200 . python -m pytest -q -m gpu tests/pallas_kernels/product_key/test_topk.py -k "True"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
