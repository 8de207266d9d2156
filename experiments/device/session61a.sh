# Call 61a: carry .whl and devrun (from session60_copies.sh; m60 = main); about 280 s. Issue
# 12's decode question with a steadier instrument than 60c's 500 back-to-back calls: the
# SDM mixer's decode step inside its jitted 32-step scans (`bench_decode`), the product-key
# top-k as the kernel against the XLA path, alternating, two processes each. S = 512 at
# the default --sdm_slots (262,144) and S = 128 at `sdm_small`'s 16,384; batches 1 and 8
# (batch x heads rows a selection, two selections a token).
source experiments/device/common.sh
decode="python -m experiments.bench_decode --mixers=M --batches=1,8 --contexts=8192 --models="
for run in a b; do
  for slots in 262144 16384; do
    for impl in xla pallas; do
      step "d_${impl}_${slots}_$run" 60 devrun/m60 $decode --sdm_topk_impl=$impl --sdm_slots=$slots
    done
  done
done
cat "$OUT"/d_*.log > "$OUT/decode.log"; rm -f "$OUT"/d_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
