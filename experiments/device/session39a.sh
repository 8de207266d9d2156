# Session 39, call a (issue 12): the final selection as a lean frontier (lane i holds the
# pairs (i, 0), (i, 1), ... in memory; a round reduces over the 16 lanes' heads and loads
# only the winner's successor, named by the pick's packed bits) against the groups
# tournament (the default), one process each, alternating, at the target shape; once each
# at the other 65,536-row shapes; then the frontier's compiled tests.
# Ran 0da1751's frontier before its fallback existed (the same rounds, no check).
source experiments/device/common.sh
TOPK="python -m experiments.bench_ops --op=topk --dtype=float32 --repeats=30 --topk_rows=65536"
T="$TOPK --topk_sub_keys=512 --topk_k=32"
for run in a b c; do
  step t_fr_$run 40 . $T --tilings=final_select=frontier
  step t_def_$run 40 . $T --tilings=default
done
step t_fr_o 60 . $TOPK --topk_sub_keys=256,1024 --topk_k=32 --tilings=final_select=frontier
step t_def_o 60 . $TOPK --topk_sub_keys=256,1024 --topk_k=32 --tilings=default
step t_fr_p 60 . $TOPK --topk_sub_keys=512,1024 --topk_k=64 --tilings=final_select=frontier
step t_def_p 60 . $TOPK --topk_sub_keys=512,1024 --topk_k=64 --tilings=default
step t_fr_r 40 . $T --tilings="final_select=frontier;block_rows=8"
step t_fr_s 40 . $T --tilings="final_select=frontier;block_rows=2"
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
step tests 150 . python -m pytest -q -m gpu tests/pallas_kernels/product_key/test_topk.py \
  -k "compiled_kernel_configs and frontier"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
