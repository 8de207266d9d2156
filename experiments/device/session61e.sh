# Call 61e: carry .whl and devrun (`source experiments/device/copies.sh; archive m61
# 5eb95c8`, which has "auto" taking the top-k kernel at any row count); kind nvidia-h200,
# about 300 s. On an H200 first one round of issue 11's step (`sdm_small` against
# `gdn_small`, unmeasured on that card since session 50); on any card then whole-model
# decoding of `sdm_small` (64 greedy tokens in one scan, batches 1 and 8, contexts 2,048
# and 32,768) with the XLA top-k against "auto" (the kernel), alternating, two processes
# each while time lasts.
source experiments/device/common.sh
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  GDN_TREE=m61 step_rounds "h" m61
fi
models="python -m experiments.bench_decode --mixers= --models=sdm_small --batches=1,8"
for run in a b; do
  for impl in xla auto; do
    step "g_${impl}_$run" 80 devrun/m61 $models --sdm_topk_impl=$impl
  done
done
cat "$OUT"/g_*.log > "$OUT/generate.log"; rm -f "$OUT"/g_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
