# Call 64a: carry .whl; name nvidia-h200 (about 420 s). Issue 11 asks for the SDM kernels'
# compiled tests on the H200: all gpu-marked tests of phase 2, the pair weights, the copies,
# the decode step, the layers and the GDN kernels (26 tests) at main, where the card is an
# H200 (else they run anyway, and the log says which card). Then the top-k's new default at
# k = 64 (candidate parts formed one at a time, `form_parts_together=False`, timed on an
# H100 in session 63) against every part formed together, in one process per order, on
# this card: S = 512 and 1,024, 65,536 rows.
source experiments/device/common.sh
step g_tests 330 . env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q -n 4 -m gpu \
  tests/pallas_kernels/sparse_delta tests/pallas_kernels/gated_delta tests/sdm_jax
topk="python -m experiments.bench_ops --op=topk --repeats=30 --dtype=float32 --topk_rows=65536"
step t_a 60 . $topk --topk_sub_keys=512,1024 --topk_k=64 --tilings=default,form_parts_together=true
step t_b 60 . $topk --topk_sub_keys=512,1024 --topk_k=64 --tilings=form_parts_together=true,default
grep -ho '"tiling": "[^"]*"\|"sub_keys": [0-9]*\|"fwd_back_to_back_ms": [0-9.]*\|"same_ids_as_xla": [a-z]*' \
  "$OUT"/t_a.log "$OUT"/t_b.log | tr '\n' ' ' >> "$OUT/calls.log"
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
