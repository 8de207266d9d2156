# Call 64f: carry .whl and devrun (as call 64e, plus devrun/v4: e64 with the tail heads'
# inexact test folded into the round's existing count of tied tail heads, one reduction
# where e64 added a second; the working tree of branch exact-sums). Call 64e (H100, S = 512,
# k = 64): e64 0.832 ms, v2 (no tail test, not exact) 0.752, main 0.775. v4 against v2 and
# main there, then v4 and main at S = 512, k = 32; both kinds of rows.
source experiments/device/common.sh
flagged="python -m experiments.device.time_topk_flagged --rows=65536 --tilings=default --inputs=normal,bf16_grid --sub_keys=512"
i=0
for tree in v4 v2 m64 v4; do
  i=$((i + 1)); step "t_${i}_${tree}" 40 "devrun/$tree" $flagged --k=64
done
for tree in v4 m64; do
  i=$((i + 1)); step "t_${i}_${tree}" 40 "devrun/$tree" $flagged --k=32
done
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
