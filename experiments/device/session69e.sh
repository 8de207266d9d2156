# Call 69e (not run: refused, too little device time left): carry .whl and devrun
# (session69d_copies.sh); kind nvidia-h100-x1. Call 69d's question in about 260 s: at issue
# 12's shape (65,536 rows, S = 512, k = 32), float32 and bf16-grid rows, default and
# `exact_order=false`: topk_rounds, topk_floats, topk_tailscore and topk_both, one process
# each; then topk_rounds at the other benchmarked shapes (69c timed group-floats and 2cd0fd2
# there).
source experiments/device/common.sh
topk_target rounds floats tailscore both
topk_other_shapes rounds
topk_collect
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
