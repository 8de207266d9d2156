# Session 56's fourth call, issue 12: `topk_decode_tilings` (common.sh), session 49b's top-k
# part, never run (loans were paused in sessions 48-49 and 56). DEADLINE=330, carry .whl
# (devrun not needed), on main's checkout.
source experiments/device/common.sh
topk_decode_tilings  # common.sh
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
