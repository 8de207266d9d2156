# Session 59's call (written in session 58, which had no device time left): DEADLINE=560,
# carry .whl and devrun (from session59_copies.sh); ask for kind nvidia-h200 (issue 11's
# card: its ratio is unmeasured since session 50) and take what comes.
# 1. The few-rows top-k default's compiled tests (session 58 merged it untested on a GPU).
# 2. Issue 11's ratio: three rounds of `sdm_small` at m59 and `gdn_small` (session 58 on an
#    H100: 1.997 / 1.999 / 2.002).
# 3. The few-rows rule where it is reasoned, not timed: 8 and 128 rows, S = 128 (`sdm_small`'s
#    decode shape), 512 and 1,024, against the old default (groups and frontier, 4 rows a
#    program at k = 32, 2 at k = 64) and the XLA path.
# 4. m59's profile, as time allows. The deadline cuts from the end.
source experiments/device/common.sh
step tests_few 100 devrun/m59 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q \
  tests/pallas_kernels/product_key/test_topk.py -k "few_rows or default_config"
GDN_TREE=m59 step_rounds "a b c" m59
topk="python -m experiments.bench_ops --op=topk --repeats=50 --topk_rows=8,128 --dtype=float32 --topk_sub_keys=128,512,1024"
groups="half_select=groups;final_select=frontier"
step t_32 90 devrun/m59 $topk --topk_k=32 "--tilings=default,$groups;block_rows=4"
step t_64 90 devrun/m59 $topk --topk_k=64 "--tilings=default,$groups;block_rows=2"
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
step_profile m59 100
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
