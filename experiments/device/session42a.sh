# Session 42, call a (issue 12): XLA's own build of the top-k at S = 512, k = 32 (registers,
# programs per SM, instructions) for the default (exact order), `exact_order=false` and the
# check without the fallback's code (devrun/check, session41d.sh's edit), each from its timed
# process, to see whether the fallback's 11% is registers or code; then the 8-row decode
# shape where the kernel lost to the XLA path (S = 1,024, k = 64) at four tilings.
source experiments/device/common.sh
F=pallas_kernels/product_key/topk_pallas.py
copy check "import re; s = re.sub(r'    lax\.cond\(_exact_order_missed\(.*?lambda: None\)', '    missed = _exact_order_missed(scores_ref, rows, idx_ref, picked, k, sub_keys)\n    pltriton.store(logits_ref.at[rows.store, jnp.zeros_like(rows.store)], jnp.zeros(rows.store.shape, logits_ref.dtype) + missed.astype(logits_ref.dtype), mask=live & missed)', s, flags=re.S)" $F
TOPK="python -m experiments.bench_ops --op=topk --repeats=30 --topk_rows=65536 --dtype=float32 --topk_sub_keys=512 --topk_k=32"
CACHE="env JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0 JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES=0"
step t_exact 60 . $CACHE JAX_COMPILATION_CACHE_DIR=/tmp/jc/exact $TOPK --tilings=default
step t_fast 50 . $CACHE JAX_COMPILATION_CACHE_DIR=/tmp/jc/fast $TOPK --tilings=exact_order=false
step t_check 50 devrun/check $CACHE JAX_COMPILATION_CACHE_DIR=/tmp/jc/check $TOPK --tilings=default
step t_decode 150 . python -m experiments.bench_ops --op=topk --repeats=30 --topk_rows=8 --dtype=float32 \
  --topk_sub_keys=1024 --topk_k=64 "--tilings=default,block_rows=1,block_rows=1;num_warps=4,half_select=threshold;final_select=threshold;block_rows=1"
for v in exact fast check; do
  step bin_$v 30 . python -m experiments.cached_binaries --from_cache=/tmp/jc/$v --binaries_dir=/tmp/bin/$v
done
( cd /tmp && tar czf "$OUT/bin_topk.tgz" bin ) 2>> "$OUT/calls.log"
cat "$OUT"/t_*.log > "$OUT/topk.log"; cat "$OUT"/bin_*.log > "$OUT/bin.log"; rm -f "$OUT"/t_*.log "$OUT"/bin_*.log
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
