# Session 34, call a (issue 11): the dataflow launches' compiled tests, then the sdm_small step
# at HEAD and copies, alternating; then XLA's build of the dataflow kernels.
source experiments/device/common.sh
cfg() { echo "s = s.replace('$DEFAULT', 'return KernelConfig(block_cols=block, $1)')"; }
copy ge64 "$(cfg 'group_entries=64')"
copy dffwd "$(cfg 'group_entries=64, forward=\"dataflow\"')"
copy dfboth "$(cfg 'group_entries=64, forward=\"dataflow\", backward=\"dataflow\"')"
copy dfpid "$(cfg 'group_entries=64, forward=\"dataflow\", backward=\"dataflow\"'); s = s.replace('ticket = platform.signal(r[\"tickets_out\"], 0, interpret)', 'ticket = pl.program_id(0)')"
grep -c "dataflow" devrun/dfpid/pallas_kernels/sparse_delta/scan_pallas.py >> "$OUT/calls.log"
step tests 120 . python -m pytest -q -m gpu tests/pallas_kernels/sparse_delta/test_scan_pallas.py -k "dataflow or prefetch"
STEP="python -m experiments.bench_ops --op=train_step --train_configs=sdm_small --repeats=10"
TREES="head:. ge64:devrun/ge64 dffwd:devrun/dffwd dfboth:devrun/dfboth dfpid:devrun/dfpid head2:. ge64b:devrun/ge64"
# A dataflow launch that hangs or faults in the tests would do the same in the step.
(( LAST_RC != 0 )) && TREES="head:. ge64:devrun/ge64 head2:. ge64b:devrun/ge64"
for t in $TREES; do
  step "step_${t%%:*}" 75 "${t#*:}" $STEP
done
cat "$OUT"/step_*.log > "$OUT/steps.log"; rm -f "$OUT"/step_*.log
export JAX_COMPILATION_CACHE_DIR=/tmp/jc JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0 JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES=0
step cache 60 devrun/dfboth python -m experiments.bench_ops --op=sdm_layer --batch=2 --seq_len=256 \
  --heads=1 --sdm_slots=16384 --model_dim=512 --sdm_writes=64 --sdm_reads=64 --repeats=1 --warmup=1 --impl=pallas --chunk_size=16
( cd /tmp && tar czf "$OUT/jc_dataflow.tgz" jc ) 2>> "$OUT/calls.log"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
