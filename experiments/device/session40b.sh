# Session 40, issue 12 (ran on a working tree not kept: 9b5cbeb with the second launch of
# devrun/two_launch_span_session40.diff, described in WORKSPACE.md, top-k, "Session 40"; its
# edits no longer apply to main and fail loudly): the frontier with its exact path as a
# second launch of few programs
# (`_rerun_kernel`, RERUN_SPAN = 8 first-launch programs per program) against the
# tournament (the default), the frontier with no second launch (devrun/nofb: not exact) and
# a span of 32 (devrun/span32), one process each, alternating, at S = 512, k = 32; the
# other shapes once each; the worst case (every program flagged); then the compiled
# frontier tests (rounding ties, flagged programs in every span, the frontier config).
source experiments/device/common.sh
F=pallas_kernels/product_key/topk_pallas.py
copy nofb "s = s.replace('final_select == \"frontier\":\n    # The tournament again', 'final_select is None:\n    # The tournament again')" $F
copy span32 "s = s.replace('RERUN_SPAN = 8', 'RERUN_SPAN = 32')" $F
TOPK="python -m experiments.bench_ops --op=topk --dtype=float32 --repeats=30 --topk_rows=65536"
T="$TOPK --topk_sub_keys=512 --topk_k=32"
for run in a b; do
  step t_fr_$run 30 . $T --tilings=final_select=frontier
  step t_tour_$run 30 . $T --tilings=default
  step t_nofb_$run 30 devrun/nofb $T --tilings=final_select=frontier
  step t_span32_$run 30 devrun/span32 $T --tilings=final_select=frontier
done
step t_fr_k 45 . $TOPK --topk_sub_keys=512,1024 --topk_k=64 --tilings=final_select=frontier
step t_tour_k 45 . $TOPK --topk_sub_keys=512,1024 --topk_k=64 --tilings=default
step t_fr_o 45 . $TOPK --topk_sub_keys=256,1024 --topk_k=32 --tilings=final_select=frontier
step t_tour_o 45 . $TOPK --topk_sub_keys=256,1024 --topk_k=32 --tilings=default
step t_flagged 60 . python experiments/device/time_topk_flagged.py --rows=65536 --sub_keys=512 --k=32
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
step tests 150 . python -m pytest -q tests/pallas_kernels/product_key/test_topk.py \
  -k "rounding and frontier or every_span or compiled_kernel_configs and final_select-frontier"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
