# Call 60b: carry .whl and devrun (from session60_copies.sh); for an H200 (issue 11's card,
# its ratio unmeasured since session 50), about 250 s. Two rounds of `sdm_small`'s step at
# main (m60) against `gdn_small`'s; then main's top-k at issue 12's target shape (65,536
# rows, S = 512, k = 32: 0.359-0.366 ms on the H200 in sessions 42-45), default against the
# groups halves with the threshold final selection (early-stopping since session 60; on 1
# row a program XLA's build takes 63 registers, 32 programs per SM, against the default's
# 118 and 17) on 4, 2 and 1 rows, and `exact_order=false`; then the step's shape (S = 128,
# k = 64).
source experiments/device/common.sh
GDN_TREE=m60 step_rounds "a b" m60
topk="python -m experiments.bench_ops --op=topk --repeats=50 --dtype=float32 --topk_rows=65536"
step t_target_m60 80 devrun/m60 $topk --topk_sub_keys=512 --topk_k=32 --tilings="default,\
final_select=threshold,final_select=threshold;block_rows=2,final_select=threshold;block_rows=1,\
exact_order=false"
step t_step_m60 40 devrun/m60 $topk --topk_sub_keys=128 --topk_k=64
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
