# Call 64e: carry .whl and devrun (session64d_copies.sh, then devrun/v2 and v3 made by
# hand from e64: v2 without the tail heads' inexact test in each round, v3 without the
# candidates' check at their formation, every round then counting as inexact); any card
# (about 120 s). Call 64d: branch exact-sums (e64) was 6% ahead of main at S = 512,
# k = 32 on both kinds of rows and 2-3% at S = 1,024, but 7% behind at S = 512, k = 64
# (0.832 against 0.775 ms), where lazy-residuals ran 0.727 on float32 rows: which part
# costs it there. S = 512, k = 64, normal rows, one process per tree.
source experiments/device/common.sh
flagged="python -m experiments.device.time_topk_flagged --rows=65536 --tilings=default --inputs=normal,bf16_grid --sub_keys=512 --k=64"
i=0
for tree in e64 v2 v3 l64 m64 e64; do
  i=$((i + 1)); step "t_${i}_${tree}" 40 "devrun/$tree" $flagged
done
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
