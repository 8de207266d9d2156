# Run (380 s) from the segment-block branch's checkout (c87adc4; the copies edit its field).
# Session 47, call a (issue 11): the segment loops in blocks of steps (`segment_block`, its
# loads issued together, one wait per block) against main (devrun/m47 = `git archive
# 8896f39 pallas_kernels sdm_jax maglev_jax experiments pyproject.toml`), `sdm_small`'s step,
# one process each, alternating; `gdn_small` in the same call for the ratio; then the
# compiled tests of the new field.
source experiments/device/common.sh
copy b2 's = s.replace("segment_block: int = 1", "segment_block: int = 2")'
copy b4 's = s.replace("segment_block: int = 1", "segment_block: int = 4")'
STEP="python -m experiments.bench_ops --op=train_step --repeats=10 --train_configs"
step s_main_a 75 devrun/m47 $STEP=sdm_small
step s_b2_a 75 devrun/b2 $STEP=sdm_small
step s_b4_a 75 devrun/b4 $STEP=sdm_small
step s_gdn 75 . $STEP=gdn_small
step s_main_b 75 devrun/m47 $STEP=sdm_small
step s_b2_b 75 devrun/b2 $STEP=sdm_small
step s_b4_b 75 devrun/b4 $STEP=sdm_small
step tests 110 . python -m pytest -q -m gpu tests/pallas_kernels/sparse_delta/test_scan_pallas.py -k segment_block
grep -o '"config": "[^"]*".*"step_back_to_back_ms": [0-9.]*' "$OUT"/s_*.log >> "$OUT/calls.log"
cat "$OUT"/s_*.log > "$OUT/steps.log"; rm -f "$OUT"/s_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
