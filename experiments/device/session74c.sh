# Call 74c: carry .whl and devrun (`bash experiments/device/session74c_copies.sh` first, on
# branch frontier-prefetch); kind nvidia-h200 (an H100 may come: say which). Branch
# frontier-prefetch (the root: successor heads formed a round ahead) against main
# (devrun/topk_main) at issue 12's shape, float32 and bf16-grid rows, default and
# `exact_order=false`, two rounds in opposite orders, with branch halves-argmax-head
# (devrun/topk_ahead) between them; then call 74b's Nsight Compute steps on
# main's kernel (ncu_stalls.log, ncu_full.log); then the k = 64 shapes for both trees.
source experiments/device/common.sh
topk_target root main ahead ahead main root
cp -r .whl devrun/topk_main/  # session74b.sh installs the wheels from its own root
( cd devrun/topk_main && OUT="$OUT" DEADLINE=$(( DEADLINE - ($(date +%s) - START) - 60 )) \
  bash experiments/device/session74b.sh )
for shape in "512 64" "1024 64"; do
  for tree in root main ahead; do
    topk_flagged "${tree}_${shape/ /_}" "$tree" ${shape% *} ${shape#* } normal default
  done
done
topk_collect
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
