# Session 34, call f (the last, small): (issue 12) top-k HEAD against ablate_topk.py's fcomb
# and both copies at 65,536 rows, S = 512, k = 32, and fcomb's compiled top-k tests; (issue 11)
# prefetch_entries in the step against HEAD, twice each, alternating.
source experiments/device/common.sh
copy prefetch "s = s.replace('  prefetch_entries: bool = False', '  prefetch_entries: bool = True')"
python3 experiments/device/ablate_topk.py fcomb both >> "$OUT/calls.log" 2>&1
cp -r tests pyproject.toml devrun/topk_fcomb/
TOPK="python -m experiments.bench_ops --op=topk --dtype=float32 --topk_rows=65536 --repeats=30 --topk_sub_keys=512 --topk_k=32 --tilings=default"
step topk_head 30 . $TOPK
step topk_fcomb 30 devrun/topk_fcomb $TOPK
step topk_both 30 devrun/topk_both $TOPK
step topk_head2 30 . $TOPK
step topk_fcomb2 30 devrun/topk_fcomb $TOPK
cat "$OUT"/topk_*.log > "$OUT/topk.log"; rm -f "$OUT"/topk_*.log
STEP="python -m experiments.bench_ops --op=train_step --repeats=10 --train_configs=sdm_small"
step step_head 55 . $STEP
step step_prefetch 55 devrun/prefetch $STEP
step step_head2 55 . $STEP
step step_prefetch2 55 devrun/prefetch $STEP
cat "$OUT"/step_*.log > "$OUT/steps.log"; rm -f "$OUT"/step_*.log
step tests 50 devrun/topk_fcomb python -m pytest -q -m gpu tests/pallas_kernels/product_key -k "compiled_matches"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
