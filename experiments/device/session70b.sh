# Call 70b: carry .whl and devrun (session70b_copies.sh); kind nvidia-h200 (issue 12's target
# is for an H200; say which card came). Main with session 70's two changes (the repository
# root) against main before them (devrun/topk_rounds, ec122ad): issue 12's shape (65,536 rows,
# S = 512, k = 32) on float32 and bf16-grid rows, default and `exact_order=false`, one process
# per tree and round, two rounds in opposite orders; `bench_ops --op=topk` for the root; the
# other benchmarked shapes for both (the root's default takes the float group bests at S =
# 1,024); then the root's compiled top-k tests.
source experiments/device/common.sh
topk_target root rounds rounds root
topk_bench root
topk_other_shapes root rounds
topk_collect
topk_tests root 300
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
