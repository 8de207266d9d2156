# Session 53's second call (after 53a, same devrun). DEADLINE=200, carry .whl and devrun.
# m53's per-op profile with its HLO: what the pair weights cost after session 52's merge
# (before it, one backward launch took about 0.78 ms on an H100 and the other 0.10), and
# the rest of the step by kernel. Read with `python -m experiments.hlo_launches --profile`.
source experiments/device/common.sh
step profile 180 devrun/m53 python -m experiments.bench_ops --op=train_step \
  --train_configs=sdm_small --repeats=5 --top_ops=2000 --hlo_dir=/tmp/hlo
[ -d /tmp/hlo ] && ( cd /tmp && tar czf "$OUT/hlo.tgz" hlo ) 2>> "$OUT/calls.log"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
