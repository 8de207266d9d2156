# Session 44, call c (issue 11), for the next device session: where sdm_small's training step
# spends its device time, op by op, with the compiled HLO beside it, so that here
# `python -m experiments.hlo_launches --hlo=.../sdm_small.hlo.txt --profile=.../profile.log
# --profile_config=sdm_small [--op_name=block_3/mixer]` sums it by source line. XLA's build
# read here (no device) puts about 9 GB of operands and results in the 159 launches of each
# SDM layer outside phase 2's loops (WORKSPACE.md, issue 11, session 44): which of them cost
# time is what this measures. gdn_small beside it, in the same process, as the reference.
source experiments/device/common.sh
step profile 360 . python -m experiments.bench_ops --op=train_step --train_configs=sdm_small,gdn_small --repeats=10 \
  --top_ops=2000 --hlo_dir=/tmp/hlo
( cd /tmp && tar czf "$OUT/hlo.tgz" hlo ) 2>> "$OUT/calls.log"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
