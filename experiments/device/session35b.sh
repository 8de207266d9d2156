# Session 35, call b (issues 12 and 11): the compiled top-k config tests that call a's time
# cut short (its 9 passed were S = 512, k = 32 and the first two of S = 1,024), the top-k
# table at the shapes with today's defaults (the packed tournament), a tiling sweep
# around the default at S = 512, k = 32, and the sdm_small step's costliest ops.
source experiments/device/common.sh
step topk_config_tests 230 . python -m pytest -q -m gpu tests/pallas_kernels/product_key -k "configs and not 512-32"
TOPK="python -m experiments.bench_ops --op=topk --dtype=float32 --repeats=30"
step topk_table 120 . $TOPK --topk_rows=65536 --topk_sub_keys=256,512,1024 --topk_k=32,64
step topk_decode 45 . $TOPK --topk_rows=8 --topk_sub_keys=256,512,1024 --topk_k=32,64
step topk_sweep 60 . $TOPK --topk_rows=65536 --topk_sub_keys=512 --topk_k=32 \
  --tilings="default,block_rows=2,block_rows=8,group_size=8,group_size=32,block_rows=8;num_warps=2,pick=argmax"
cat "$OUT"/topk_[tds]*.log > "$OUT/topk.log"; rm -f "$OUT"/topk_table.log "$OUT"/topk_decode.log "$OUT"/topk_sweep.log
step step_profile 90 . python -m experiments.bench_ops --op=train_step --repeats=10 --train_configs=sdm_small --top_ops=30
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
