# Session 49's second call; it replaces call 48d and repeats what call 49a left close.
# DEADLINE=590, carry .whl and devrun (session49_copies.sh), run from main's checkout.
# TREES (default below) names the copies to time again, one round, in that order: pick
# them from call 49a's figures (f47 e47 p47 attribute all-cuts if it does not win whole).
# PROFILE names the tree whose step is profiled last (default s49w2).
# Issue 12 first: the one shape where the kernel loses to the XLA path (8 rows, S = 1,024,
# k = 64: 0.0550 ms at best against 0.0497, session 42e) with the tilings not yet tried
# there: the groups halves with the threshold final selection (no lazy tails, so both
# halves rank all k entries in two interleaved chains, then 32 counting passes over the
# candidates instead of k frontier rounds), one row per program on 1, 2 and 4 warps, and
# the frontier on 2 warps. Twice, in opposite orders (a tiling measured later in a
# process ran up to 4% slower, session 38), then the threshold tiling's compiled cases.
source experiments/device/common.sh
TREES=${TREES:-s49w2 m49 a48}
topk_decode_tilings  # common.sh
step_rounds b $TREES
# `gdn_small`'s step in the same call: the baseline of the 2x target.
step s_gdn 75 devrun/m49 python -m experiments.bench_ops --op=train_step --train_configs=gdn_small --repeats=10
collect_steps
# Last, if time is left: the step's per-op profile at PROFILE's tree (default the stack)
# with its HLO beside it (the last one is call 44c's, before 7 kernel and glue commits on
# main and every change on the stack); read here with
# `experiments.hlo_launches --profile=profile.log --profile_config=sdm_small`.
PROFILE=${PROFILE:-s49w2}
step profile 150 "devrun/$PROFILE" python -m experiments.bench_ops --op=train_step \
  --train_configs=sdm_small --repeats=5 --top_ops=2000 --hlo_dir=/tmp/hlo
[ -d /tmp/hlo ] && ( cd /tmp && tar czf "$OUT/hlo.tgz" hlo ) 2>> "$OUT/calls.log"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
