# Not run in session 46 (the loan was refused); ready for the next session: DEADLINE=260, carry .whl.
# Session 46, call c (issue 11): main with unique-perms merged (1d2a4f1), `sdm_small`'s step
# twice around `gdn_small`'s, one process each: the step's ratio at this tree.
source experiments/device/common.sh
STEP="python -m experiments.bench_ops --op=train_step --repeats=10 --train_configs"
step s_sdm_a 75 . $STEP=sdm_small
step s_gdn 75 . $STEP=gdn_small
step s_sdm_b 75 . $STEP=sdm_small
grep -o '"config": "[^"]*".*"step_back_to_back_ms": [0-9.]*' "$OUT"/s_*.log >> "$OUT/calls.log"
cat "$OUT"/s_*.log > "$OUT/steps.log"; rm -f "$OUT"/s_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
