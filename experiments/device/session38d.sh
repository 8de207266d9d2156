# Session 38, call d (issue 12): the final tournament's group reload with the group index
# clamped instead of each lane (XLA's build of 344ec34 loaded the clamped lanes one by one,
# with an address each; pip Triton: the final round's loop 396 -> 359 instructions)
# against HEAD before it (devrun/h37, carried: `git archive 344ec34`), in alternating
# processes at the target shape and once each at the other 65,536-row shapes; then the
# compiled tests of the default.
source experiments/device/common.sh
TOPK="python -m experiments.bench_ops --op=topk --dtype=float32 --repeats=30 --topk_rows=65536"
T="$TOPK --topk_sub_keys=512 --topk_k=32 --tilings=default"
for run in a b c; do
  step t_new_$run 40 . $T
  step t_old_$run 40 devrun/h37 $T
done
step t_new_o 60 . $TOPK --topk_sub_keys=256,1024 --topk_k=32 --tilings=default
step t_old_o 60 devrun/h37 $TOPK --topk_sub_keys=256,1024 --topk_k=32 --tilings=default
step t_new_p 60 . $TOPK --topk_sub_keys=512,1024 --topk_k=64 --tilings=default
step t_old_p 60 devrun/h37 $TOPK --topk_sub_keys=512,1024 --topk_k=64 --tilings=default
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
step tests 150 . python -m pytest -q -m gpu tests/pallas_kernels/product_key/test_topk.py \
  -k "compiled_matches and pallas or compiled_kernel_configs and default"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
