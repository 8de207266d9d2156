# Call 75g: main at 8a8dfda (the tails' flag in units of 2R; the same operations as d6e5973
# at block_rows=4), carry .whl; kind nvidia-h200 (an H100 may come: say which). Issue 12's
# shape once, then the compiled top-k tests.
source experiments/device/common.sh
topk_flagged main_512_32 root 512 32 normal,bf16_grid default
topk_tests root 240
topk_collect
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
