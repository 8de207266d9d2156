# Ran on branch exact-lazy-tails (8cd78de). Its `lazy_tail=False` step failed: the tiling
# parser takes `lazy_tail=false`.
# Session 40, issue 12, after session40d.sh found the exact lazy tails 30% slower (0.420
# against 0.324-0.327 ms): where the cost is. This tree (the tails' checks and the second
# pass), a copy whose checks' flag is stored instead of starting the second pass
# (devrun/checks), and the frontier without lazy tails (exact, no tails to check), one
# process each, at S = 512, k = 32.
source experiments/device/common.sh
copy checks "import re; s = re.sub(r'    lax.cond\(tails_misordered,.*?lambda: None\)', '    pltriton.store(work[\"fallback_candidates\"].at[rows.store, 0, 0], jnp.broadcast_to(tails_misordered.astype(jnp.int32), rows.store.shape), mask=live)', s, flags=re.S)" pallas_kernels/product_key/topk_pallas.py
T="python -m experiments.bench_ops --op=topk --repeats=30 --topk_rows=65536 --dtype=float32 --topk_sub_keys=512 --topk_k=32"
step t_checks 30 devrun/checks $T --tilings=default
step t_nolazy 30 . $T --tilings=lazy_tail=False
step t_new 30 . $T --tilings=default
cat "$OUT"/t_*.log > "$OUT/topk.log"; rm -f "$OUT"/t_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
