# Session 41, issue 12, call c: the lean `_exact_frontier` (tails by blocked scans, the
# threshold's tie check in its own selection) against session 40's tree (devrun/h40, a
# `git archive 51a5eb3` copy, carried), one process each, alternating, at S = 512, k = 32
# and sdm_small's S = 128, k = 64; then the compiled top-k tests and the worst case. (Call
# b timed the first form: 11-27% slower, 254 registers in pip Triton's build.)
source experiments/device/common.sh
TOPK="python -m experiments.bench_ops --op=topk --repeats=30 --topk_rows=65536 --dtype=float32 --tilings=default"
for run in a b; do
  step t_new_$run 60 . $TOPK --topk_sub_keys=512 --topk_k=32
  step t_h40_$run 40 devrun/h40 $TOPK --topk_sub_keys=512 --topk_k=32
done
step t_new_layer 50 . $TOPK --topk_sub_keys=128 --topk_k=64
step t_h40_layer 40 devrun/h40 $TOPK --topk_sub_keys=128 --topk_k=64
step tests 200 . env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q -n 8 -m gpu tests/pallas_kernels/product_key/test_topk.py
step t_flagged 50 . python -m experiments.device.time_topk_flagged --rows=65536 --sub_keys=512 --k=32
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
