# Call 64c: carry .whl and devrun (session64b_copies.sh after branch `lazy-residuals` was
# rebased onto main with time_topk_flagged's --inputs); any card (name nvidia-h200; about
# 200 s). Call 64b (H100) had the branch (l64) ahead of main (m64) at all five float32
# shapes by 3-6% and behind on swamped rows by 14%. The layer passes scores with bf16
# values held in float32, where every row's best 33 sums hold a key tie (400-row sample,
# S = 512), so the branch's tie rounds run there: both trees on those rows and on normal
# rows, one process each, alternating, twice; then S = 1,024 and k = 64 on the bf16 grid.
source experiments/device/common.sh
flagged="python -m experiments.device.time_topk_flagged --rows=65536 --tilings=default --inputs=bf16_grid,normal"
for round in a b; do
  for tree in m64 l64; do
    step "t_${tree}_$round" 40 "devrun/$tree" $flagged --sub_keys=512 --k=32
  done
done
for tree in m64 l64; do
  step "t_${tree}_1024" 40 "devrun/$tree" $flagged --sub_keys=1024 --k=32
  step "t_${tree}_k64" 40 "devrun/$tree" $flagged --sub_keys=512 --k=64
done
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
