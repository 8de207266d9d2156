# Call 77b (session 77): make the trees first, here: `source experiments/device/copies.sh;
# archive topk_main 2bab7ed; archive topk_new <this session's kernel commit>`; carry .whl
# and devrun; kind nvidia-h200 (an H100 may come). Main with the pick logs compacted, the
# first half's picks and (where a thread holds at most 4) the frontier's picks in
# registers ("new", call 77a's idx-regs with the picks stored again at S = 512, k = 64)
# against main before it (2bab7ed): issue 12's shape, the steady state over 30 and 300
# calls (`bench_ops` with `lax.top_k` and the XLA path, `profile_topk`), the compiled top-k
# tests, the four other 65,536-row shapes, and issue 12's shape again in the opposite order.
source experiments/device/common.sh
topk_target new main
topk_steady_state new new
topk_tests new 240
topk_other_shapes new main
for round in "main 3" "new 4"; do
  set -- $round
  topk_flagged "$1_512_32_$2" "$1" 512 32 normal,bf16_grid default,exact_order=false
done
topk_collect
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
