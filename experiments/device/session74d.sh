# Call 74d: carry .whl and devrun (`bash experiments/device/session74d_copies.sh` first, on
# branch no-ranks-operand); kind nvidia-h200 (an H100 may come: say which). Where a forward
# call's device time goes beside the kernel (the replay took 0.279 ms a launch, the calls
# 0.316-0.325 back to back): `profile_topk` in main (devrun/topk_main) and in the root (the
# branch: the frontier's pallas_call without the constant ranks operand, whose broadcast XLA
# launched as a kernel of its own before each call); then both timed at issue 12's shape on
# float32 rows, two processes each in opposite orders.
source experiments/device/common.sh
step p_main 40 devrun/topk_main python -m experiments.device.profile_topk
step p_root 40 . python -m experiments.device.profile_topk
for tree in root main main root; do
  n=$(( ${n:-0} + 1 ))
  topk_flagged "${tree}_512_32_$n" "$tree" 512 32 normal default
done
topk_collect
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
