# Call 76e (written in session 76, not run: the try was refused with too little device time
# left to start a machine; about 300 s of run): make the trees first, here: `source
# experiments/device/copies.sh; archive topk_base 7f5dc64; archive topk_main 2bab7ed;
# archive topk_cl compact-logs` (compact-logs.patch on 255fc65: `git am` it on a branch
# from there); carry .whl and devrun; kind nvidia-h200 (an H100 may come).
# Main with the L1 hints (2bab7ed): whether the default tiling is still the fastest at issue
# 12's shape (one process, float32 rows), main at the four other shapes, and the decode
# shape (8 rows, the threshold selections, whose logits' loads now carry the `evict_first`
# hint too) for main and the main before (base), each op also timed inside a jitted scan
# of 64 calls. Then branch compact-logs beside main: the pick logs' lanes for the ranked
# ranks only, so a row's four planes take 2 lines of 128 B where they took 4 half-used
# ones (8 lines fewer a program in L1 at S = 512, k = 32; XLA's 0.10.2 build: 93
# registers, 3,120 instructions against 3,112).
source experiments/device/common.sh
topk_flagged main_tilings main 512 32 normal \
  default,group_size=32,group_size=8,float_group_bests=true,block_rows=2,block_rows=8
topk_other_shapes main
for tree in base main; do
  step "d_$tree" 100 "$(topk_dir "$tree")" python -m experiments.bench_ops --op=topk \
    --repeats=50 --dtype=float32 --topk_rows=8 --topk_sub_keys=512,1024 --topk_k=32,64
done
cat "$OUT"/d_*.log > "$OUT/decode.log"; rm -f "$OUT"/d_*.log
topk_target main cl cl main
topk_other_shapes cl
topk_collect
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
