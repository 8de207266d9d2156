# Call 68b: as 68a (carry .whl and devrun from session68_copies.sh), with this tree's
# frontier no longer computing a residual each round: the heads' second-half scores are
# kept and the residuals formed only in a tie branch, entered where `_sums_exact` of the
# ranked scores does not hold. At k = 64 this tree also tries 4 rows a program (the
# frontier no longer stores candidates). The compiled tests last, on 8 workers.
source experiments/device/common.sh
# Trees: main (devrun/topk_main) and root (this tree, logged as "lazy" in calls 68a-68c).
topk_target main root root main
for shape in "256 32" "1024 32" "512 64" "1024 64"; do
  set -- $shape
  topk_flagged "main_$1_$2" main "$1" "$2" normal default
  topk_flagged "root_$1_$2" root "$1" "$2" normal default,block_rows=4
done
topk_bench root
topk_collect
topk_tests root 150
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
