# Session 42, call b (issue 12): is the exact default's 11% the fallback's code, or its
# latency in the few programs that run it? XLA's build (call a) gives the default, the check
# alone and `exact_order=false` the same 96 registers, 21 programs per SM and near-identical
# hot loops. Copies: `never` keeps `_exact_frontier`'s code but never runs it (its condition
# also needs a score above 3e38), `check` stores the flag instead (session41d.sh's edit).
# One process each, alternating, S = 512, k = 32.
source experiments/device/common.sh
F=pallas_kernels/product_key/topk_pallas.py
copy never "s = s.replace('    lax.cond(_exact_order_missed(scores_ref, rows, idx_ref, picked, k, sub_keys),', '    lax.cond(_exact_order_missed(scores_ref, rows, idx_ref, picked, k, sub_keys) & _any_row(_load_scores(scores_ref, rows, jnp.zeros_like(rows.load), None) > 3e38),')" $F
copy check "import re; s = re.sub(r'    lax\.cond\(_exact_order_missed\(.*?lambda: None\)', '    missed = _exact_order_missed(scores_ref, rows, idx_ref, picked, k, sub_keys)\n    pltriton.store(logits_ref.at[rows.store, jnp.zeros_like(rows.store)], jnp.zeros(rows.store.shape, logits_ref.dtype) + missed.astype(logits_ref.dtype), mask=live & missed)', s, flags=re.S)" $F
TOPK="python -m experiments.bench_ops --op=topk --repeats=30 --topk_rows=65536 --dtype=float32 --topk_sub_keys=512 --topk_k=32 --tilings=default"
for run in a b; do
  step t_exact_$run 60 . $TOPK
  step t_never_$run 60 devrun/never $TOPK
  step t_check_$run 50 devrun/check $TOPK
done
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
