# Session 43, call c (issue 11), for the next device session: XLA's own build of the SDM
# layer's kernels (phase 1's pair weights, phase 2's gather / dense / scatter and backward
# kernels) at sdm_small's tiling, kept from a short layer run's compilation cache, so that
# `triton_ir_stats.py --live` can show where each holds its registers (the union backward:
# 80 registers, 6 programs per SM in sessions 30-34).
source experiments/device/common.sh
step cache 90 . $CACHE JAX_COMPILATION_CACHE_DIR=/tmp/jc/layer python -m experiments.bench_ops --op=sdm_layer --batch=2 \
  --seq_len=256 --heads=1 --sdm_slots=16384 --model_dim=512 --sdm_writes=64 --sdm_reads=64 --repeats=1 --warmup=1 \
  --impl=pallas --chunk_size=16
binaries bin_layer.tgz layer
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
