# Session 39, call c (issue 12): the frontier default with its fallback decided from the
# second half's ranked scores (`_lanes_may_misorder`: a few [R, L] loads per program; call
# b's check of every candidate's successor in memory cost 4% at k = 32 and 16% at k = 64)
# against the frontier without any fallback (devrun/nofb), alternating, at S = 512 with
# k = 32 and 64; the default once at the other shapes; the frontier against the threshold
# selections at S = 128, k = 32 and S = 256, k = 64 (S = 4k); then the compiled tests.
# At the time `KernelConfig` defaulted to final_select="frontier" (from 0da1751 the
# tournament is the default again): on later trees add final_select=frontier to the tilings.
source experiments/device/common.sh
copy nofb "s = s.replace('  lax.cond(misordered, tournament, frontier)', '  frontier()')" \
  pallas_kernels/product_key/topk_pallas.py
TOPK="python -m experiments.bench_ops --op=topk --dtype=float32 --repeats=30 --topk_rows=65536"
for run in a b; do
  step t_def_$run 40 . $TOPK --topk_sub_keys=512 --topk_k=32 --tilings=default
  step t_nofb_$run 40 devrun/nofb $TOPK --topk_sub_keys=512 --topk_k=32 --tilings=default
done
step t_def_k 40 . $TOPK --topk_sub_keys=512 --topk_k=64 --tilings=default
step t_nofb_k 40 devrun/nofb $TOPK --topk_sub_keys=512 --topk_k=64 --tilings=default
step t_def_o 60 . $TOPK --topk_sub_keys=256,1024 --topk_k=32 --tilings=default
step t_def_p 40 . $TOPK --topk_sub_keys=1024 --topk_k=64 --tilings=default
step t_fr_q 40 . $TOPK --topk_sub_keys=256 --topk_k=64 \
  --tilings="half_select=groups;final_select=frontier;block_rows=2"
step t_fr_r 40 . $TOPK --topk_sub_keys=128 --topk_k=32 \
  --tilings="half_select=groups;final_select=frontier;block_rows=4"
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
step tests 200 . python -m pytest -q -m gpu tests/pallas_kernels/product_key/test_topk.py \
  -k "compiled_matches and pallas or compiled_kernel_configs and (default or tournament) and not lazy_tail"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
