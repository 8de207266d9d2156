# Call 69d (not run: no machine started in session 69; 69e is the same cut short): carry
# .whl and devrun (session69d_copies.sh); kind nvidia-h200 (an H100 or an H200, whichever
# comes: say which). Call 69c (an H100) found branch group-floats (its "root") 4-23% faster
# than main of then (2cd0fd2) at S = 256 and 1,024 and at k = 64, but at issue 12's shape
# level with it, where its first change alone (topk_rounds, on main since session 69) was 3%
# faster. Here, at issue 12's shape (65,536 rows, S = 512, k = 32), float32 and bf16-grid
# rows, default and `exact_order=false`: topk_rounds, topk_floats (+ float group bests),
# topk_tailscore (+ tail heads' scores from their keys) and topk_both (both), one process
# per tree and round, two rounds in opposite orders; `bench_ops --op=topk` for topk_rounds;
# the other benchmarked shapes for all four (69c timed group-floats and 2cd0fd2 there; XLA
# builds topk_rounds with fewer registers than either at k = 64: WORKSPACE.md, session 69).
source experiments/device/common.sh
topk_target rounds floats tailscore both both tailscore floats rounds
topk_bench rounds
topk_other_shapes rounds floats tailscore both
topk_collect
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
