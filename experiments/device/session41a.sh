# Prepared in session 40 for the next device session (issue 12; not yet run): the default
# (the frontier with lazy tails, not exact under rounding ties) against the frontier
# without lazy tails (exact: `--tilings=lazy_tail=false`) and the tournament, one process
# each, alternating, at S = 512, k = 32; then the other shapes for the exact form; then the
# 8-row decode shapes at the default (not timed since the frontier became the default).
# The compiled tests run after the first six steps.
source experiments/device/common.sh
TOPK="python -m experiments.bench_ops --op=topk --dtype=float32 --repeats=30 --topk_rows=65536"
T="$TOPK --topk_sub_keys=512 --topk_k=32"
for run in a b; do
  step t_default_$run 30 . $T --tilings=default
  step t_exact_$run 30 . $T --tilings=lazy_tail=false
  step t_tour_$run 30 . $T --tilings=final_select=tournament
done
# Every compiled top-k test (session 40's default, the frontier with `_TieWatch`, ran only
# its rounding-tie tests compiled: 6 passed).
step tests 200 . python -m pytest -q tests/pallas_kernels/product_key/test_topk.py -k "compiled or rounding or swamp or without_lazy"
step t_exact_o 60 . $TOPK --topk_sub_keys=256,512,1024 --topk_k=32,64 --tilings=lazy_tail=false
step t_default_o 60 . $TOPK --topk_sub_keys=256,512,1024 --topk_k=32,64 --tilings=default
step t_decode 60 . python -m experiments.bench_ops --op=topk --dtype=float32 --repeats=30 \
  --topk_rows=8 --topk_sub_keys=256,512,1024 --topk_k=32,64 --tilings=default
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
