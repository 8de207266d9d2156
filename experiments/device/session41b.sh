# Session 41, issue 12: the exact-sum order (`topk_xla.sum_residual`; lanes and lazy tails
# exact by construction, `_exact_order_missed` and the rare `_exact_frontier` in the kernel)
# against session 40's tree (devrun/h40, a `git archive 51a5eb3` copy, carried), one process
# each, alternating: S = 512, k = 32 in float32 (twice) and bf16, and sdm_small's shape (S =
# 128, k = 64, threshold selections); then the compiled top-k tests (xdist from .whl), the
# worst case (every program falls back) and the other 65,536-row shapes.
source experiments/device/common.sh
TOPK="python -m experiments.bench_ops --op=topk --repeats=30 --topk_rows=65536"
T="$TOPK --dtype=float32 --topk_sub_keys=512 --topk_k=32 --tilings=default"
for run in a b; do
  step t_new_$run 30 . $T
  step t_h40_$run 30 devrun/h40 $T
done
B="$TOPK --dtype=bfloat16 --topk_sub_keys=512 --topk_k=32 --tilings=default"
step t_new_bf16 30 . $B
step t_h40_bf16 30 devrun/h40 $B
L="$TOPK --dtype=float32 --topk_sub_keys=128 --topk_k=64 --tilings=default"
step t_new_layer 30 . $L
step t_h40_layer 30 devrun/h40 $L
step tests 220 . env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q -n 8 -m gpu tests/pallas_kernels/product_key/test_topk.py
step t_flagged 50 . python -m experiments.device.time_topk_flagged --rows=65536 --sub_keys=512 --k=32
step t_new_o 90 . $TOPK --dtype=float32 --topk_sub_keys=256,1024 --topk_k=32 --tilings=default
step t_new_k 90 . $TOPK --dtype=float32 --topk_sub_keys=512,1024 --topk_k=64 --tilings=default
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
