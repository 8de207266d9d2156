# Session 39, call e (issue 12): the frontier with its fallback as a second launch (the
# tournament re-run only in programs `_lanes_may_misorder` flags; call c's `lax.cond` inside
# one kernel cost 6%) against the tournament, alternating, at S = 512, k = 32; k = 64 and
# the other k = 32 shapes once; the rounding-tie tests and one config test compiled.
# Ran a tree that was then reverted (two launches, 0.376 ms; its diff is
# devrun/two_launch_session39.diff, git-ignored); on later trees final_select=frontier is
# the one-kernel form.
source experiments/device/common.sh
TOPK="python -m experiments.bench_ops --op=topk --dtype=float32 --repeats=30 --topk_rows=65536"
T="$TOPK --topk_sub_keys=512 --topk_k=32"
step t_fr_a 30 . $T --tilings=final_select=frontier
step t_tour_a 30 . $T --tilings=final_select=tournament
step t_fr_b 30 . $T --tilings=final_select=frontier
step t_fr_k 30 . $TOPK --topk_sub_keys=512 --topk_k=64 --tilings=final_select=frontier
step tests 80 . python -m pytest -q tests/pallas_kernels/product_key/test_topk.py \
  -k "rounding and frontier or compiled_kernel_configs and final_select-frontier and 512-32"
step t_fr_o 40 . $TOPK --topk_sub_keys=256,1024 --topk_k=32 --tilings=final_select=frontier
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
