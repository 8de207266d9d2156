# Call 60b: carry .whl and devrun (from session60_copies.sh); for an H200 (issue 11's card,
# its ratio unmeasured since session 50), about 230 s. Two rounds of `sdm_small`'s step at
# main (m60) against `gdn_small`'s, then main's top-k at issue 12's target shape (65,536
# rows, S = 512, k = 32: 0.359-0.366 ms on the H200 in sessions 42-45) and the step's (S =
# 128, k = 64).
source experiments/device/common.sh
GDN_TREE=m60 step_rounds "a b" m60
step t_target_m60 60 devrun/m60 python -m experiments.bench_ops --op=topk --repeats=50 \
  --dtype=float32 --topk_rows=65536 --topk_sub_keys=128,512 --topk_k=32,64
mv "$OUT/t_target_m60.log" "$OUT/topk.log"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
