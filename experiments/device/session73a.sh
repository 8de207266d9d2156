# Call 73a: carry .whl and devrun (`bash experiments/device/session73a_copies.sh` first);
# kind nvidia-h200 (issue 12's target card; an H100 may come: say which). Main's default at
# issue 12's shape as call 70c times it (float32 and bf16-grid rows, default and
# `exact_order=false`; `bench_ops --op=topk` beside `lax.top_k` and the XLA path), then the
# fixed branch frontier-check (devrun/topk_fc): its default against `frontier_check=true`,
# one process each way round, and on swamped rows (every program falls back).
source experiments/device/common.sh
main_forms=default,exact_order=false
topk_flagged root_512_32_1 root 512 32 normal,bf16_grid "$main_forms"
topk_bench root
topk_flagged fc_512_32_1 fc 512 32 normal,bf16_grid default,frontier_check=true
topk_flagged fc_512_32_2 fc 512 32 normal,bf16_grid frontier_check=true,default
topk_flagged root_512_32_2 root 512 32 normal,bf16_grid "$main_forms"
topk_flagged fc_512_32_swamped fc 512 32 swamped default,frontier_check=true
topk_collect
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
