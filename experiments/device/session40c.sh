# Session 40, issue 12: the frontier whose fallback flag is gathered while the halves are
# ranked (`_TieWatch`, a few [R, 1] operations per round) against the tournament (the
# default), the frontier with session 39's flag from reloaded scores (devrun/loads:
# `_lanes_may_misorder`) and the frontier with no flag and no fallback (devrun/nofb: not
# exact), one process each, alternating, at S = 512, k = 32; the other shapes once each;
# the worst case (every program flagged); then the compiled frontier tests.
source experiments/device/common.sh
F=pallas_kernels/product_key/topk_pallas.py
copy loads "s = s.replace('watch_ties=config.final_select == \"frontier\")', 'watch_ties=False)')" $F
copy nofb "s = s.replace('lax.cond(misordered, tournament, frontier)', 'frontier()')" $F
TOPK="python -m experiments.bench_ops --op=topk --dtype=float32 --repeats=30 --topk_rows=65536"
T="$TOPK --topk_sub_keys=512 --topk_k=32"
for run in a b; do
  step t_fr_$run 30 . $T --tilings=final_select=frontier
  step t_tour_$run 30 . $T --tilings=default
  step t_loads_$run 30 devrun/loads $T --tilings=final_select=frontier
  step t_nofb_$run 30 devrun/nofb $T --tilings=final_select=frontier
done
step t_fr_k 45 . $TOPK --topk_sub_keys=512,1024 --topk_k=64 --tilings=final_select=frontier
step t_tour_k 45 . $TOPK --topk_sub_keys=512,1024 --topk_k=64 --tilings=default
step t_fr_o 45 . $TOPK --topk_sub_keys=256,1024 --topk_k=32 --tilings=final_select=frontier
step t_tour_o 45 . $TOPK --topk_sub_keys=256,1024 --topk_k=32 --tilings=default
step t_flagged 60 . python -m experiments.device.time_topk_flagged --rows=65536 --sub_keys=512 --k=32
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
step tests 150 . python -m pytest -q tests/pallas_kernels/product_key/test_topk.py \
  -k "rounding and frontier or compiled_kernel_configs and final_select-frontier"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
