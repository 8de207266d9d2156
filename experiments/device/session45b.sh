# Session 45, call b (issue 11): two glue cuts on branch glue-sorts (8eeada0) timed in
# sdm_small's step against main (devrun/m45 = `git archive main`, 4f0e7f3, carried): the
# row orders' argsorts as one-key sorts, and tile_starts without a contended histogram
# (session 45's profile: the four argsorts 0.33 ms, the pair weights' backward histograms
# 0.22 ms per step). The branch's step with its costliest ops, so the cut ops' times show.
source experiments/device/common.sh
STEP="python -m experiments.bench_ops --op=train_step --train_configs=sdm_small --repeats=10"
step s_branch_a 100 . $STEP --top_ops=400
step s_main_a 70 devrun/m45 $STEP
grep -o '"config": "[^"]*".*"step_back_to_back_ms": [0-9.]*' "$OUT"/s_*.log >> "$OUT/calls.log"
cat "$OUT"/s_*.log > "$OUT/steps.log"; rm -f "$OUT"/s_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
