# Ran on branch exact-lazy-tails (8cd78de), with devrun/head a `git archive ef7061e` copy.
# Session 40, issue 12: exact lazy tails (`_tails_misordered`, a second pass without tails
# where they may have broken the tie rule) against ef7061e (devrun/head, carried: `git
# archive ef7061e pallas_kernels sdm_jax maglev_jax experiments pyproject.toml`; the frontier
# default without the tails' checks) and the tournament, one process each, alternating, at
# S = 512, k = 32; the compiled tests of the tie rules and the default configs; then the
# other shapes, bf16, the 8-row decode shapes and the worst case (every program flagged).
source experiments/device/common.sh
TOPK="python -m experiments.bench_ops --op=topk --repeats=30 --topk_rows=65536"
T="$TOPK --dtype=float32 --topk_sub_keys=512 --topk_k=32"
for run in a b; do
  step t_new_$run 30 . $T --tilings=default
  step t_head_$run 30 devrun/head $T --tilings=default
  step t_tour_$run 30 . $T --tilings=final_select=tournament
done
step tests 170 . python -m pytest -q tests/pallas_kernels/product_key/test_topk.py \
  -k "rounding or xla_twin_where or compiled_kernel_configs and (default or final_select or block_rows-2)"
step t_new_o 50 . $TOPK --dtype=float32 --topk_sub_keys=256,512,1024 --topk_k=32,64 --tilings=default
step t_new_bf16 25 . $TOPK --dtype=bfloat16 --topk_sub_keys=512 --topk_k=32 --tilings=default
step t_head_bf16 25 devrun/head $TOPK --dtype=bfloat16 --topk_sub_keys=512 --topk_k=32 --tilings=default
step t_new_decode 40 . python -m experiments.bench_ops --op=topk --repeats=30 --topk_rows=8 \
  --dtype=float32 --topk_sub_keys=256,512,1024 --topk_k=32,64 --tilings=default
step t_flagged 40 . python -m experiments.device.time_topk_flagged --rows=65536 --sub_keys=512 --k=32
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
