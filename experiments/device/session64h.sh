# Call 64h: carry .whl and devrun (as call 64g); any card (about 60 s). Call 64g had e64
# behind main at S = 1,024, k = 32 on bf16-grid rows only (0.589 against 0.574 ms; call
# 64d's e64 ran 0.564 there): both trees again, alternating, twice.
source experiments/device/common.sh
flagged="python -m experiments.device.time_topk_flagged --rows=65536 --tilings=default --inputs=bf16_grid,normal --sub_keys=1024 --k=32"
for round in a b; do
  for tree in e64 m64; do
    step "t_${tree}_$round" 40 "devrun/$tree" $flagged
  done
done
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
