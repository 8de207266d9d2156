# Call 65a: carry .whl; name nvidia-h200 (about 300 s). At main's root. Session 64 merged
# branch exact-sums (the frontier computes residuals only where a tied sum is inexact):
# 0.352-0.355 ms at issue 12's shape on an H100 against 0.373-0.380 before, never timed on
# an H200, where the target is <= 0.33 ms and main ran 0.356-0.369 before it. Issue 12's
# shape (65,536 rows, S = 512, k = 32) three times with the default, `exact_order=false`
# (the floor without the exact order) and candidate parts one at a time (2.5% slower at
# k = 32 before the change, session 63) in one process each; then the default on bf16-grid
# rows at k = 32 and 64; then the four other shapes; then layer A (its top-k runs the
# frontier at S = 512, k = 64). Say which card ran it.
source experiments/device/common.sh
topk="python -m experiments.bench_ops --op=topk --repeats=30 --dtype=float32 --topk_rows=65536"
step t_a 40 . $topk --topk_sub_keys=512 --topk_k=32 \
  --tilings=default,exact_order=false,form_parts_together=false
step t_b 40 . $topk --topk_sub_keys=512 --topk_k=32 \
  --tilings=form_parts_together=false,exact_order=false,default
step t_c 40 . $topk --topk_sub_keys=512 --topk_k=32 \
  --tilings=exact_order=false,default,form_parts_together=false
for k in 32 64; do
  step "f_$k" 40 . python -m experiments.device.time_topk_flagged --rows=65536 --sub_keys=512 \
    --k=$k --tilings=default --inputs=bf16_grid,normal
done
step t_k32 50 . $topk --topk_sub_keys=256,1024 --topk_k=32
step t_k64 50 . $topk --topk_sub_keys=512,1024 --topk_k=64
step layer_a 90 . python -m experiments.bench_ops --op=sdm_layer --heads=1 --sdm_writes=64 \
  --sdm_reads=64 --chunk_size=32 --repeats=5 --impl=pallas --batch=2 --seq_len=8192 \
  --sdm_slots=262144 --model_dim=2048
grep -ho '"tiling": "[^"]*"\|"sub_keys": [0-9]*\|"k": [0-9]*\|"fwd_back_to_back_ms": [0-9.]*\|"same_ids_as_xla": [a-z]*' \
  "$OUT"/t_*.log | tr '\n' ' ' >> "$OUT/calls.log"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
