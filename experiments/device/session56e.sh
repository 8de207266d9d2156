# Session 56's fifth call (any machine the others left warm, same devrun and carry).
# DEADLINE=400. o56's compiled tests (bf16 outputs and the float32 default against the XLA
# twin), then `sdm_small`'s step, one process each, two rounds: m56 (main), o56
# (bf16-outputs: 2 launches fewer and 269 MB less a layer, but the union's d_out loops 11-12
# instructions longer a step in XLA's build). About 300 s on a host like 55a's.
source experiments/device/common.sh
step tests_o56 120 devrun/o56 env XLA_PYTHON_CLIENT_PREALLOCATE=false python -m pytest -q \
  -m gpu tests/pallas_kernels/sparse_delta/test_scan_pallas.py \
  -k "bfloat16_outputs or (float32 and compiled)"
step_rounds "a b" m56 o56
echo "done $(( $(date +%s) - START )) s" >> "$OUT/calls.log"
