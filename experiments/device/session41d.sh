# Session 41, issue 12, call d: the exact-order check as a switch (`KernelConfig.exact_order`,
# on by default): the default, `exact_order=false`, a copy with the check but without the
# fallback's code (devrun/check: the flag stored into lane 0 of the logits, which the
# logits' store overwrites; results unchanged on random rows) and session 40's tree
# (devrun/h40, a `git archive 51a5eb3` copy, carried), one process each, at S = 512, k = 32;
# then the compiled tests of the config without the check.
source experiments/device/common.sh
F=pallas_kernels/product_key/topk_pallas.py
copy check "import re; s = re.sub(r'    lax\.cond\(_exact_order_missed\(.*?lambda: None\)', '    missed = _exact_order_missed(scores_ref, rows, idx_ref, picked, k, sub_keys)\n    pltriton.store(logits_ref.at[rows.store, jnp.zeros_like(rows.store)], jnp.zeros(rows.store.shape, logits_ref.dtype) + missed.astype(logits_ref.dtype), mask=live & missed)', s, flags=re.S)" $F
TOPK="python -m experiments.bench_ops --op=topk --repeats=30 --topk_rows=65536 --dtype=float32 --topk_sub_keys=512 --topk_k=32"
step t_fast 45 . $TOPK --tilings=exact_order=false
step t_exact 45 . $TOPK --tilings=default
step t_check 45 devrun/check $TOPK --tilings=default
step t_h40 30 devrun/h40 $TOPK --tilings=default
step tests 60 . env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q -n 3 -m gpu tests/pallas_kernels/product_key/test_topk.py -k exact_order
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
