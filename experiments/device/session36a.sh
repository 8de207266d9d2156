# Session 36, call a (issue 12): the lazy tails (`KernelConfig.lazy_tail`: each half's ranks
# from k // 2 on as one lazy candidate of the final tournament) against the default, back
# to back in each process, at every shape where the groups tournament is the default; then
# the compiled tests of the lazy configs.
source experiments/device/common.sh
TOPK="python -m experiments.bench_ops --op=topk --dtype=float32 --repeats=30 --topk_rows=65536 --tilings=default,lazy_tail=true"
step lazy_1 100 . $TOPK --topk_sub_keys=256,512,1024 --topk_k=32
step lazy_2 100 . $TOPK --topk_sub_keys=512,1024 --topk_k=64
step lazy_3 100 . $TOPK --topk_sub_keys=512,1024 --topk_k=32
cat "$OUT"/lazy_*.log > "$OUT/lazy.log"; rm -f "$OUT"/lazy_[0-9].log
step tests 240 . python -m pytest -q -m gpu tests/pallas_kernels/product_key/test_topk.py -k "lazy"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
