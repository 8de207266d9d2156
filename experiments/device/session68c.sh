# Call 68c: as 68b (carry .whl and devrun from session68_copies.sh; this tree's frontier forms
# its heads in registers, devrun/topk_main's stores its candidates), for the card that
# comes (kind nvidia-h200: issue 12's target is for an H200). The target shape, two rounds
# in opposite orders; `bench_ops` there; at k = 64 this tree's 2 rows a program (then the
# default) against 4, twice in opposite orders, and main; S = 256 and 1,024 at k = 32; then
# the compiled top-k tests with the time left.
source experiments/device/common.sh
# Trees: main (devrun/topk_main) and root (this tree, logged as "lazy" in calls 68a-68c).
topk_target main root root main
topk_bench root
for shape in "512 64" "1024 64"; do
  set -- $shape
  topk_flagged "root_$1_$2_a" root "$1" "$2" normal default,block_rows=4
  topk_flagged "root_$1_$2_b" root "$1" "$2" normal block_rows=4,default
  topk_flagged "main_$1_$2" main "$1" "$2" normal default
done
for shape in "256 32" "1024 32"; do
  set -- $shape
  for tree in main root; do topk_flagged "${tree}_$1_$2" "$tree" "$1" "$2" normal default; done
done
topk_collect
topk_tests root 300
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
