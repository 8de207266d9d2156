# Call 75d: make the trees first, here: `source experiments/device/copies.sh; archive
# topk_main a6b5cf7; archive topk_ff fused-flags; archive topk_lf load-first`
# (patches experiments/device/branches/{fused-flags,load-first}.patch on main at a6b5cf7);
# carry .whl and devrun; kind nvidia-h200 (an H100 may come: say which). Call 75c timed
# `fused-flags` level with main at issue 12's shape on float32 rows (0.317, 0.309 against
# 0.314, 0.314), 1-2% ahead with exact_order=false (the only change there: the lane's next
# head loaded before the tails' branch), and 11% behind at S = 1,024, k = 64 in one run.
# `load-first` is that load move alone. Three rounds per tree at issue 12's shape, in
# rotating orders, then the k = 64 shapes twice each.
source experiments/device/common.sh
topk_target main ff lf lf main ff ff lf main
for shape in "512 64" "1024 64"; do
  for tree in main ff lf lf ff main; do
    topk_flagged "${tree}_${shape/ /_}_$RANDOM" "$tree" ${shape% *} ${shape#* } normal default
  done
done
topk_collect
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
