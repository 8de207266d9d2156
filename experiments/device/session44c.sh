# Session 44, call c (issue 11), for the next device session. First, where sdm_small's
# training step spends its device time, op by op, with the compiled HLO beside it, so that
# here `python -m experiments.hlo_launches --hlo=.../sdm_small.hlo.txt --profile=.../profile.log
# --profile_config=sdm_small [--op_name=block_3/mixer]` sums it by source line. XLA's build
# read here (no device) puts about 8.4 GB of operands and results in the 156 launches of
# each SDM layer outside phase 2's loops (WORKSPACE.md, issue 11, session 44): which of them
# cost time is what this measures; gdn_small beside it, in the same process. Then the step
# at this tree against session 43's (devrun/h43: `git archive 227eb86 pallas_kernels sdm_jax
# maglev_jax experiments pyproject.toml`, carried), alternating, one process each: session
# 44's untimed cuts (the backward's buffers uninitialized, the pair weights' backward
# storing dk instead of its cells, the top-k's backward in one scatter-add).
source experiments/device/common.sh
# The kernels this session changed, compiled, before any timing: the pair weights' backward
# (dk stored per writer), phase 2 with every uninitialized buffer filled with NaN first.
step tests 150 . env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q -n 8 -m gpu \
  tests/pallas_kernels/sparse_delta/test_pair_weights.py tests/pallas_kernels/sparse_delta/test_scan_pallas.py
step profile 240 . python -m experiments.bench_ops --op=train_step --train_configs=sdm_small,gdn_small --repeats=10 \
  --top_ops=2000 --hlo_dir=/tmp/hlo
( cd /tmp && tar czf "$OUT/hlo.tgz" hlo ) 2>> "$OUT/calls.log"
STEP="python -m experiments.bench_ops --op=train_step --train_configs=sdm_small --repeats=10"
step s_head_a 75 . $STEP
step s_h43_a 75 devrun/h43 $STEP
step s_head_b 75 . $STEP
step s_h43_b 75 devrun/h43 $STEP
grep -o '"config": "[^"]*".*"step_back_to_back_ms": [0-9.]*' "$OUT"/s_*.log >> "$OUT/calls.log"
cat "$OUT"/s_*.log > "$OUT/steps.log"; rm -f "$OUT"/s_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
