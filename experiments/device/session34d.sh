# Session 34, call d (issues 11 and 12; calls b and c merged after two refused starts),
# group_entries=64 now the default: the compiled scan tests; the step at HEAD (with gdn_small)
# and with prefetch_entries; the top-k groups kernel cut (ablate_topk.py) at 65,536 rows,
# S = 512, k = 32 with XLA's build of it; the layer at B's shapes; then, if time is left, the
# step at HEAD again and the layer at A's shapes.
source experiments/device/common.sh
copy prefetch "s = s.replace('  prefetch_entries: bool = False', '  prefetch_entries: bool = True')"
python3 experiments/device/ablate_topk.py clamp th tf >> "$OUT/calls.log" 2>&1
step tests 170 . python -m pytest -q -m gpu tests/pallas_kernels/sparse_delta/test_scan_pallas.py
STEP="python -m experiments.bench_ops --op=train_step --repeats=10"
step step_head 90 . $STEP --train_configs=sdm_small,gdn_small
step step_prefetch 70 devrun/prefetch $STEP --train_configs=sdm_small
TOPK="python -m experiments.bench_ops --op=topk --dtype=float32 --topk_rows=65536 --repeats=30 --topk_sub_keys=512 --topk_k=32 --tilings=default"
export JAX_COMPILATION_CACHE_DIR=/tmp/jc JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0 JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES=0
step topk_head 50 . $TOPK
unset JAX_COMPILATION_CACHE_DIR
( cd /tmp && tar czf "$OUT/jc_topk.tgz" jc ) 2>> "$OUT/calls.log"
for t in clamp th tf; do step topk_$t 45 devrun/topk_$t $TOPK; done
cat "$OUT"/topk_*.log > "$OUT/topk.log"; rm -f "$OUT"/topk_*.log
LAYER="python -m experiments.bench_ops --op=sdm_layer --heads=1 --sdm_writes=64 --sdm_reads=64 --dtype=bfloat16 --repeats=5 --impl=pallas"
step layer_b 60 . $LAYER --batch=16 --seq_len=2048 --sdm_slots=16384 --model_dim=512 --chunk_size=16
step step_head2 60 . $STEP --train_configs=sdm_small
step layer_a 80 . $LAYER --batch=2 --seq_len=8192 --sdm_slots=262144 --model_dim=2048 --chunk_size=32
cat "$OUT"/step_*.log > "$OUT/steps.log"; rm -f "$OUT"/step_*.log
cat "$OUT"/layer_*.log > "$OUT/layers.log" 2>/dev/null; rm -f "$OUT"/layer_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
