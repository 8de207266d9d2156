# Call 77a (session 77): make the trees first, here: `source experiments/device/copies.sh;
# archive topk_base 7f5dc64; archive topk_main 2bab7ed; archive topk_cl compact-logs;
# archive topk_fr first-regs; archive topk_ir idx-regs` (patches in
# experiments/device/branches/, each on 255fc65: compact-logs; first-regs = compact-logs +
# its commit; idx-regs = first-regs + its commit); carry .whl and devrun; kind nvidia-h200
# (an H100 may come). Call 76e's measurements (written in session 76, never run) with
# branches first-regs and idx-regs beside them:
# - issue 12's shape for main, compact-logs (the pick logs' lanes for the ranked ranks
#   only: a row's four planes in 2 lines of 128 B, not 4 half-used ones) and first-regs
#   (on compact-logs: the first half's picks kept in registers for the frontier, so its
#   log is never written and each row's log is one line; a half's two planes adjacent;
#   the tails' partners from the halves' start states; XLA's 0.10.2 build: 95 registers,
#   3,088 instructions, the frontier's loop body 437 against main's 93 / 3,120 / 482),
#   and idx-regs (on first-regs: the frontier's picks kept in registers, [R, 32] int32,
#   stored once a row after the rounds where a round stored 4 bytes, and the logits formed
#   from them without reloading the ids; 96 registers, 2,992 instructions), rounds in
#   opposite orders;
# - the four other 65,536-row shapes for the four;
# - whether the default tiling is still the fastest after the hints (main);
# - the decode shape (8 rows) for main and the main before the hints (base), each op
#   also timed inside a jitted scan of 64 calls.
source experiments/device/common.sh
topk_target main cl fr ir ir fr cl main
topk_other_shapes main cl fr ir
topk_flagged main_tilings main 512 32 normal \
  default,group_size=32,group_size=8,float_group_bests=true,block_rows=2,block_rows=8
for tree in base main; do
  step "d_$tree" 100 "$(topk_dir "$tree")" python -m experiments.bench_ops --op=topk \
    --repeats=50 --dtype=float32 --topk_rows=8 --topk_sub_keys=512,1024 --topk_k=32,64
done
cat "$OUT"/d_*.log > "$OUT/decode.log"; rm -f "$OUT"/d_*.log
topk_collect
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
