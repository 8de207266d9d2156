# Call 74a: carry .whl and devrun (`bash experiments/device/session74_copies.sh` first, on
# branch frontier-overlap); kind nvidia-h200 (issue 12's target card; an H100 may come: say
# which). The branch (the root: the halves' rounds inside the frontier's) against main
# (devrun/topk_main): issue 12's shape (65,536 rows, S = 512, k = 32) on float32 and bf16-grid
# rows, default and `exact_order=false`, one process per tree and round, two rounds in
# opposite orders (and devrun/topk_later once); `bench_ops --op=topk` for both; the other benchmarked shapes for both;
# then the root's compiled top-k tests in the time left.
source experiments/device/common.sh
topk_target root main main root later
topk_bench root
topk_bench main
topk_other_shapes root main
topk_collect
topk_tests root 240
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
