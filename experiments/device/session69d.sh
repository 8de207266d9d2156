# Call 69d: carry .whl and devrun (session69d_copies.sh); kind nvidia-h200 (an H100 or an
# H200, whichever comes: say which). Call 69c (an H100) found branch frontier-rounds 13-23%
# faster than main at S = 1,024 and at k = 64, but at issue 12's shape its first change
# alone (topk_rounds) 3% faster and the whole branch level with main. Here, at issue 12's
# shape (65,536 rows, S = 512, k = 32), float32 and bf16-grid rows, default and
# `exact_order=false`: topk_rounds, topk_floats (+ float group bests), topk_tailscore
# (+ tail heads' scores from their keys) and the branch (the repository root), one process
# per tree and round, two rounds in opposite orders; `bench_ops --op=topk` for topk_rounds;
# the other benchmarked shapes for topk_rounds (69c timed the branch and main there).
source experiments/device/common.sh
topk_target rounds floats tailscore root root tailscore floats rounds
topk_bench rounds
topk_other_shapes rounds
topk_collect
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
