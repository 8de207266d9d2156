# Call 69c: carry .whl and devrun (session69c_copies.sh); kind nvidia-h100-x1 (the branch
# comparison; the H200 target figure is a later call's). Issue 12's shape (65,536 rows,
# S = 512, k = 32) on float32 and bf16-grid rows, default and `exact_order=false`: branch
# frontier-rounds (the repository root: float group bests, tail heads' scores from their
# keys), topk_rounds (its frontier change alone) and main (2cd0fd2), one process per tree
# and round, two rounds in opposite orders; the branch's group sizes 8 and 32 and 8 rows a
# program on two warps beside its default (one process); `bench_ops --op=topk` for the
# branch and main; the other benchmarked shapes for both; the branch's compiled top-k tests
# with the time left.
source experiments/device/common.sh
topk_target root rounds main main rounds root
topk_flagged root_tilings root 512 32 normal \
  "default,group_size=8,group_size=32,block_rows=8;num_warps=2"
topk_bench root
topk_bench main
topk_other_shapes root main
topk_collect
topk_tests root 300
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
