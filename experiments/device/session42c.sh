# Session 42, call c (issue 12; its tree: `git apply experiments/device/session42c.diff` at
# 4bda6b8, not kept): the frontier made exact without `_exact_frontier` (rounds
# past the k-th while a row's best untaken candidate ties its k-th key, then `_order_ties`
# ranks the equal keys by their residuals, a few loads in the programs that need it) against
# `exact_order=false` and session 41's tree (devrun/h41, a `git archive e430609` copy,
# carried), one process each, alternating, at S = 512, k = 32; the other 65,536-row shapes and
# bf16 once; the worst case (every program's picks tie); then the compiled top-k tests.
source experiments/device/common.sh
TOPK="python -m experiments.bench_ops --op=topk --repeats=30 --topk_rows=65536"
T32="$TOPK --dtype=float32 --topk_sub_keys=512 --topk_k=32"
for run in a b; do
  step t_new_$run 60 . $T32 --tilings=default
  step t_fast_$run 45 . $T32 --tilings=exact_order=false
  step t_h41_$run 60 devrun/h41 $T32 --tilings=default
done
step t_new_shapes 120 . $TOPK --dtype=float32 --topk_sub_keys=256,1024 --topk_k=32 --tilings=default
step t_new_k64 120 . $TOPK --dtype=float32 --topk_sub_keys=128,512 --topk_k=64 --tilings=default
step t_new_bf16 60 . $TOPK --dtype=bfloat16 --topk_sub_keys=512 --topk_k=32 --tilings=default,exact_order=false
step t_flagged 60 . python -m experiments.device.time_topk_flagged --rows=65536 --sub_keys=512 --k=32
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
step tests 200 . env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q -n 8 -m gpu tests/pallas_kernels/product_key/test_topk.py
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
