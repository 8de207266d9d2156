# Session 39, call b (issue 12): the frontier as the default, with its fallback to the
# tournament for programs whose lanes rounding put out of id order, against the same
# without the check (devrun/nofb) and the tournament, one process each, alternating, at the
# target shape; the default once at the other 65,536-row shapes; the frontier against the
# threshold selections where S <= 4k (the default there); then the compiled tests.
# Ran a tree whose check loaded every candidate's successor from memory (dropped for
# `_lanes_may_misorder` before 0da1751); on later trees its nofb edit fails loudly.
source experiments/device/common.sh
copy nofb "s = s.replace('  lax.cond(out_of_order > 0, tournament, frontier)', '  frontier()')" \
  pallas_kernels/product_key/topk_pallas.py
TOPK="python -m experiments.bench_ops --op=topk --dtype=float32 --repeats=30 --topk_rows=65536"
T="$TOPK --topk_sub_keys=512 --topk_k=32"
for run in a b; do
  step t_def_$run 40 . $T --tilings=default
  step t_nofb_$run 40 devrun/nofb $T --tilings=default
  step t_tour_$run 40 . $T --tilings=final_select=tournament
done
step t_def_o 60 . $TOPK --topk_sub_keys=256,1024 --topk_k=32 --tilings=default
step t_def_p 60 . $TOPK --topk_sub_keys=512,1024 --topk_k=64 --tilings=default
step t_thr_q 60 . $TOPK --topk_sub_keys=128,256 --topk_k=64 --tilings=default
step t_fr_q 60 . $TOPK --topk_sub_keys=128,256 --topk_k=64 \
  --tilings="half_select=groups;final_select=frontier;block_rows=2"
step t_thr_r 40 . $TOPK --topk_sub_keys=128 --topk_k=32 --tilings=default
step t_fr_r 40 . $TOPK --topk_sub_keys=128 --topk_k=32 \
  --tilings="half_select=groups;final_select=frontier;block_rows=4"
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
step tests 220 . python -m pytest -q -m gpu tests/pallas_kernels/product_key/test_topk.py \
  -k "compiled_matches and pallas or compiled_kernel_configs and (default or tournament) and not lazy_tail"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
