# Session 39, call d (issue 12): the frontier run in every program at the top level, the
# tournament re-run after it only where `_lanes_may_misorder` says the lanes may be out of
# order (call c's `lax.cond` choosing between the two cost 6% at S = 512, k = 32), against
# the frontier without any fallback (devrun/nofb), alternating; then one compiled test.
# Ran a tree that was then reverted (the frontier then the tournament, 0.352 ms); on later
# trees its nofb edit fails loudly.
source experiments/device/common.sh
copy nofb "s = s.replace('  lax.cond(misordered, tournament, lambda: None)', '')" \
  pallas_kernels/product_key/topk_pallas.py
TOPK="python -m experiments.bench_ops --op=topk --dtype=float32 --repeats=30 --topk_rows=65536"
for run in a b; do
  step t_def_$run 40 . $TOPK --topk_sub_keys=512 --topk_k=32 --tilings=default
  step t_nofb_$run 40 devrun/nofb $TOPK --topk_sub_keys=512 --topk_k=32 --tilings=default
done
step t_def_k 40 . $TOPK --topk_sub_keys=512 --topk_k=64 --tilings=default
step t_nofb_k 40 devrun/nofb $TOPK --topk_sub_keys=512 --topk_k=64 --tilings=default
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
step tests 100 . python -m pytest -q -m gpu tests/pallas_kernels/product_key/test_topk.py \
  -k "compiled_matches and pallas and 512-32 or compiled_kernel_configs and default and 1024-64"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
