# Session 35, call a (issues 11 and 12): everything at the session-34 defaults (group_entries=64,
# prefetch_entries on, the packed top-k tournament): the compiled scan and top-k tests, the
# layer at B's and A's shapes, the sdm_small step twice around gdn_small's, then the compiled
# top-k config tests with whatever time is left.
source experiments/device/common.sh
step scan_tests 170 . python -m pytest -q -m gpu tests/pallas_kernels/sparse_delta/test_scan_pallas.py
step topk_tests 90 . python -m pytest -q -m gpu tests/pallas_kernels/product_key -k compiled_matches
LAYER="python -m experiments.bench_ops --op=sdm_layer --heads=1 --sdm_writes=64 --sdm_reads=64 --dtype=bfloat16 --repeats=5 --impl=pallas"
step layer_b 60 . $LAYER --batch=16 --seq_len=2048 --sdm_slots=16384 --model_dim=512 --chunk_size=16
step layer_a 80 . $LAYER --batch=2 --seq_len=8192 --sdm_slots=262144 --model_dim=2048 --chunk_size=32
cat "$OUT"/layer_*.log > "$OUT/layers.log" 2>/dev/null; rm -f "$OUT"/layer_*.log
STEP="python -m experiments.bench_ops --op=train_step --repeats=10"
step step_sdm 70 . $STEP --train_configs=sdm_small
step step_gdn 60 . $STEP --train_configs=gdn_small
step step_sdm2 70 . $STEP --train_configs=sdm_small
cat "$OUT"/step_*.log > "$OUT/steps.log"; rm -f "$OUT"/step_*.log
step topk_config_tests 200 . python -m pytest -q -m gpu tests/pallas_kernels/product_key -k configs
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
