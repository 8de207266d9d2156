# Not run: session 46 ran call 46b instead (experiments/device/session46b.sh: the same pairs
# plus the stagger branch).
# Session 46, call a (issue 11), for the next device session: branch unique-perms (phase 1's
# gathers and scatters by write_order declared permutations, `layout.permuted`) against
# main (devrun/m46 = `git archive main pallas_kernels sdm_jax maglev_jax experiments
# pyproject.toml`, carried), one process each, alternating. XLA's build (session 45): 2
# fewer scatter-adds and 0.24 GB less per SDM layer, 17 more copy launches in the step.
# Run from the branch's checkout.
source experiments/device/common.sh
STEP="python -m experiments.bench_ops --op=train_step --train_configs=sdm_small --repeats=10"
step s_branch_a 75 . $STEP
step s_main_a 75 devrun/m46 $STEP
step s_branch_b 75 . $STEP
step s_main_b 75 devrun/m46 $STEP
grep -o '"config": "[^"]*".*"step_back_to_back_ms": [0-9.]*' "$OUT"/s_*.log >> "$OUT/calls.log"
cat "$OUT"/s_*.log > "$OUT/steps.log"; rm -f "$OUT"/s_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
